-- Revision 0012's downgrade: the definitions ledger goes (its functions are
-- dropped by the migration before this runs).
DROP TABLE __SCHEMA__.taskhub_definitions;
