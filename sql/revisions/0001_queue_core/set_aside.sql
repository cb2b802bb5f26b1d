-- The procedures this revision defines. Existing functions of these names
-- (duroxide's, in an adopted schema) are saved and dropped; downgrade
-- re-creates them.
SELECT __SCHEMA__.taskhub_set_aside_functions(ARRAY[
    'enqueue_orchestrator_work',
    'fetch_orchestration_item',
    'ack_orchestration_item',
    'abandon_orchestration_item',
    'renew_orchestration_item_lock',
    'enqueue_worker_work',
    'fetch_work_item',
    'ack_worker',
    'abandon_work_item',
    'renew_work_item_lock',
    'fetch_history',
    'fetch_history_with_execution',
    'append_history'
]);
