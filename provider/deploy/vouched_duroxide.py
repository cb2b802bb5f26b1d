"""What the released duroxide 0.2.2 runtime creates: the digests of its
functions, which `taskhub-pg check` accepts beside the package's own code
(provider/operations/drift_check.py). Written by
`python -m devkit.schema.duroxide_digests URL`; do not edit by hand.
"""

# 'name language md5(body)', the schema written as __SCHEMA__.
BODIES = frozenset(
    {
        "abandon_orchestration_item plpgsql 2eace2e794a0bc8d399cfba0f60a7715",
        "abandon_work_item plpgsql c13dd0130afc2d2c987013fa0b251271",
        "ack_orchestration plpgsql fba7da79908312595fe880ad70b21987",
        "ack_orchestration_item plpgsql 356d9dda5227a7c61aa3bab0e5833059",
        "ack_worker plpgsql 3f0f462b182e3d6f4c341ace35671fb3",
        "append_history plpgsql 19ed427efb246c74824cdaf7751d40fe",
        "cleanup_orphaned_sessions plpgsql 11ab38cfddbfdfb784b1c016a3d674da",
        "cleanup_schema plpgsql db43162669e3c12584667fc0996c26e7",
        "delete_instances_atomic plpgsql 3dc9ebb3e67fc20ba1dbeec7721fb976",
        "enqueue_completion plpgsql ba9d5b2f28ac7face4594cf9ae147446",
        "enqueue_message plpgsql b2e1d0b22d9ed3ee5e8e541f8ac49ecf",
        "enqueue_orchestration_work plpgsql 80c0bb24ba6db31f132e65fec709b065",
        "enqueue_orchestrator_work plpgsql 2907c2aef67ab1e0aad3cef6de2b5608",
        "enqueue_worker_work plpgsql f28bcb898660073d89f24f0bfb8fdd00",
        "fetch_history plpgsql 923a5e53865fe8c87c88a6b5d3882990",
        "fetch_history_with_execution plpgsql db297d1de87783b0564be3906bc83c52",
        "fetch_orchestration_item plpgsql 4898a3252b1008cdd052284814c9a7a5",
        "fetch_work_item plpgsql ccbdcbc1cc63ece66f0ba154b9b43ffc",
        "get_custom_status plpgsql ae55ce7acb60fe6cd38762907b19f62f",
        "get_execution_info plpgsql 7536965f3670566dd706e6f410321635",
        "get_instance_info plpgsql 38166308fd204baf4098a96049705b57",
        "get_instance_stats plpgsql 5e899edda7f46d0301bd7489e9ad64cb",
        "get_kv_all_values plpgsql d4752b7cdfce78969f38761e965e12c2",
        "get_kv_value plpgsql f51a248853f26a385840fd57878500fb",
        "get_parent_id plpgsql ba16f0e9ef3afa5d2a83f34c1a2bcd2c",
        "get_queue_depths plpgsql 4c6015cbea7b991dbb57eb48fe3239d0",
        "get_system_metrics plpgsql a27d344c996e5dcc3859cd53c0309a76",
        "latest_execution_id plpgsql 5aacb69f10ad0478cb0f9cf1f4fdb2a7",
        "list_children plpgsql bcc67e77e49425c122b331e5436da783",
        "list_executions plpgsql 62640695b4ea58d74ad22cb4ccfb9100",
        "list_instances plpgsql 2e9dda1211d550dd4c149394995de1c5",
        "list_instances_by_status plpgsql eea3504d41e72dbe065421df2f2cb389",
        "prune_executions plpgsql c10dcd72e663b7e5948436285f487056",
        "renew_orchestration_item_lock plpgsql 7be8c7f69ec62ba0e0e3542b0fee9e3b",
        "renew_session_lock plpgsql 66831057dfe9dffbe3dc2271e1cddf66",
        "renew_work_item_lock plpgsql 39f357a2937cd6b1167517898414f87c",
    }
)

# md5(pg_get_functiondef(...)), the schema written as __SCHEMA__.
DEFINITIONS = frozenset(
    {
        "0a06cd94d61ec0955f9abdde0b8d16f5",
        "0dd007a6004aed57bb24765c365cb87d",
        "151a495d93a324888646281b22e78312",
        "1557f3f937af71e801b83180ecebe144",
        "39bcf67ccc27f08cd33640ad60400b7d",
        "52b441ba966a5860033460df74a3f0e8",
        "589730c45bedc72f3b9093b3911e1bb6",
        "6c56dd2150de4c597fe58e470f67a3e7",
        "799c60def8dbd871409a725fb6f1ddf1",
        "7b7b078413184f5dd0b98e025f995ffd",
        "8051eab2b57858c90f34358056e8cbcc",
        "89588066c7ee01a4b8f966463a42de47",
        "8aa77de3939ae9da6fb057373f13f600",
        "8f19ccaf65032f26de9d576e45ab9205",
        "9498fbe15e54813d8ffbb17253a3f2e6",
        "967dd1bb696803f40fe60a607c4bf300",
        "9987df4629a7b4c722a74a519097c09d",
        "9c3a33eacacce6601f93ca298490fcad",
        "9fbf504355f8f95f8d7fb9e5623ac20d",
        "a03ab8a650dda436a25dcf80f75baeec",
        "a37cb5c976a15c07b731cc698d736c1b",
        "ac2e9b6214bfd97d74011a69a442efb0",
        "af3a03a63472e8a1b24d116502038429",
        "b522945d3c585692755b3237150d6f33",
        "bb4194cf1749005db3e2dba73b8fe7d9",
        "c07dc26739ae2a6044bbf411a2980aff",
        "c22e93a06a07473d0ac281007ace4c4c",
        "c46d62e183f7b3e204e1314fa9099065",
        "d5e7d46199fa443eaf3a0f901e0cc189",
        "d5fa1b2afbfff196f533b5348e0521e8",
        "df7abda507f060a41672d5b89f4057f5",
        "e5245d551e96e0a8bd20dda4da1f97ae",
        "e86ab752bcddc5230491462ad46999ca",
        "e9890add7b4846280d9bab9dfb35254b",
        "ef7535a30199d1b6e9211525c6897772",
        "fdaab7870fc599406c64e9be74a397b5",
    }
)
