/*
 * event_trigger_admin: a managed service's admin that may create event
 * triggers without being a superuser, for the tests only.
 *
 * RDS's rds_superuser, Cloud SQL's cloudsqlsuperuser, Supabase's postgres
 * and Neon's admin may run CREATE, ALTER and DROP EVENT TRIGGER, which plain
 * PostgreSQL allows only a superuser. Each service does it with code of its
 * own in the server; this module does the same for the sessions it is
 * loaded in (the tests load it for the admin alone, with
 * ALTER ROLE ... SET session_preload_libraries): such a statement, run by
 * the session's own role (not after SET ROLE, and not inside a SECURITY
 * DEFINER function of another role), runs as the bootstrap superuser, who
 * then owns the event trigger. Nothing else changes.
 */
#include "postgres.h"

#include "catalog/pg_authid_d.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static ProcessUtility_hook_type previous_utility_hook = NULL;

static bool
is_event_trigger_statement(Node *statement)
{
	switch (nodeTag(statement))
	{
		case T_CreateEventTrigStmt:
		case T_AlterEventTrigStmt:
			return true;
		case T_DropStmt:
			return ((DropStmt *) statement)->removeType == OBJECT_EVENT_TRIGGER;
		case T_AlterOwnerStmt:
			return ((AlterOwnerStmt *) statement)->objectType == OBJECT_EVENT_TRIGGER;
		case T_RenameStmt:
			return ((RenameStmt *) statement)->renameType == OBJECT_EVENT_TRIGGER;
		default:
			return false;
	}
}

static void
run_utility(PlannedStmt *statement, const char *query, bool read_only_tree,
			ProcessUtilityContext context, ParamListInfo params,
			QueryEnvironment *environment, DestReceiver *destination,
			QueryCompletion *completion)
{
	if (previous_utility_hook != NULL)
		previous_utility_hook(statement, query, read_only_tree, context, params,
							  environment, destination, completion);
	else
		standard_ProcessUtility(statement, query, read_only_tree, context, params,
								environment, destination, completion);
}

static void
event_trigger_admin_utility(PlannedStmt *statement, const char *query,
							bool read_only_tree, ProcessUtilityContext context,
							ParamListInfo params, QueryEnvironment *environment,
							DestReceiver *destination, QueryCompletion *completion)
{
	Oid			saved_user;
	int			saved_context;

	if (!is_event_trigger_statement(statement->utilityStmt)
		|| GetUserId() != GetSessionUserId()
		|| superuser())
	{
		run_utility(statement, query, read_only_tree, context, params,
					environment, destination, completion);
		return;
	}

	GetUserIdAndSecContext(&saved_user, &saved_context);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   saved_context | SECURITY_LOCAL_USERID_CHANGE);
	PG_TRY();
	{
		run_utility(statement, query, read_only_tree, context, params,
					environment, destination, completion);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(saved_user, saved_context);
	}
	PG_END_TRY();
}

void
_PG_init(void)
{
	previous_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = event_trigger_admin_utility;
}
