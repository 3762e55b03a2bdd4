import type { Migration } from "kysely/migration";
import * as m20261122000100 from "./20261122000100_accounts_users_memberships.ts";
import * as m20261122000200 from "./20261122000200_broker.ts";
import * as m20261122000300 from "./20261122000300_accounts_auth.ts";
import * as m20261123010100 from "./20261123010100_invitations.ts";
import * as m20261123010200 from "./20261123010200_password_resets.ts";
import * as m20261123010300 from "./20261123010300_session_authenticated_at.ts";
import * as m20261123020100 from "./20261123020100_storage.ts";
import * as m20261123030100 from "./20261123030100_secrets.ts";
import * as m20261123030200 from "./20261123030200_node_templates.ts";
import * as m20261123040000 from "./20261123040000_mcp_registry.ts";
import * as m20261123060000 from "./20261123060000_flows.ts";
import * as m20261123060100 from "./20261123060100_flow_steps.ts";
import * as m20261123070000 from "./20261123070000_runs.ts";
import * as m20261123080000 from "./20261123080000_gateways.ts";
import * as m20261123090000 from "./20261123090000_delivery_ids_by_age.ts";
import * as m20261123120000 from "./20261123120000_run_leases.ts";
import * as m20261125010000 from "./20261125010000_gateway_subjects_any_case.ts";
import * as m20261125020000 from "./20261125020000_run_steps.ts";
import * as m20261125030000 from "./20261125030000_broker_usage.ts";
import * as m20261126010000 from "./20261126010000_flow_on_failure.ts";
import * as m20261126020000 from "./20261126020000_run_events.ts";
import * as m20261126030000 from "./20261126030000_flow_schedules.ts";
import * as m20261126040000 from "./20261126040000_flow_concurrency.ts";
import * as m20261126050000 from "./20261126050000_flow_throttle.ts";
import * as m20261126060000 from "./20261126060000_replay_jobs.ts";
import * as m20261126070000 from "./20261126070000_run_trigger_search.ts";
import * as m20261126080000 from "./20261126080000_account_run_retention.ts";
import * as m20261126090000 from "./20261126090000_concurrency_held_slots.ts";
import * as m20261127010000 from "./20261127010000_run_deliveries.ts";
import * as m20261127020000 from "./20261127020000_runs_partition_bound.ts";
import * as m20261127020100 from "./20261127020100_runs_partition_bound_validated.ts";
import * as m20261127020200 from "./20261127020200_runs_partitioned.ts";
import * as m20261127020300 from "./20261127020300_run_steps_reference_partitioned_runs.ts";
import * as m20261127020400 from "./20261127020400_run_steps_partitioned.ts";
import * as m20261127030000 from "./20261127030000_broker_lanes.ts";
import * as m20261128040000 from "./20261128040000_flow_schedule_interval.ts";
import * as m20261128060000 from "./20261128060000_queue_reason_codes.ts";
import * as m20261128070000 from "./20261128070000_account_storage.ts";
import * as m20261128080000 from "./20261128080000_broker_lane_waiting.ts";
import * as m20261129010000 from "./20261129010000_run_end_reason.ts";
import * as m20261129020000 from "./20261129020000_flow_rate_limit_singleton_start_timeout.ts";
import * as m20261129030000 from "./20261129030000_flow_debounce_batch.ts";
import * as m20261129040000 from "./20261129040000_flow_priority.ts";
import * as m20261130010000 from "./20261130010000_flow_mcp_tool.ts";
import * as m20261130050000 from "./20261130050000_run_traceparent.ts";
import * as m20261201000000 from "./20261201000000_account_trace_run_data.ts";
import * as m20261202000000 from "./20261202000000_runs_end_in_place.ts";
import * as m20261202000100 from "./20261202000100_run_references_by_statement.ts";
import * as m20261202000200 from "./20261202000200_broker_references_by_statement.ts";
import * as m20261203000000 from "./20261203000000_rate_limit_turns.ts";
import * as m20261204000000 from "./20261204000000_broker_hot_statements_as_functions.ts";
import * as m20261204000100 from "./20261204000100_run_insert_as_function.ts";
import * as m20261205000000 from "./20261205000000_rate_limit_tallies.ts";
import * as m20261205000100 from "./20261205000100_singleton_judge.ts";
import * as m20261205000200 from "./20261205000200_run_throttle_turn_numbers.ts";
import * as m20261207000000 from "./20261207000000_debounce_judge.ts";
import * as m20261207000100 from "./20261207000100_judges_generic_plans.ts";
import * as m20261207000200 from "./20261207000200_batch_judge.ts";
import * as m20261208000000 from "./20261208000000_runs_page.ts";
import * as m20261208000100 from "./20261208000100_slot_take.ts";
import * as m20261209000000 from "./20261209000000_throttle_turns.ts";
import * as m20261209000100 from "./20261209000100_slot_hand_over.ts";
import * as m20261209000200 from "./20261209000200_run_functions_index_plans.ts";

/**
 * Every migration, by its timestamped name. A landed migration is frozen;
 * a change to the schema is a new file registered here.
 */
export const migrations: Record<string, Migration> = {
  "20261122000100_accounts_users_memberships": m20261122000100,
  "20261122000200_broker": m20261122000200,
  "20261122000300_accounts_auth": m20261122000300,
  "20261123010100_invitations": m20261123010100,
  "20261123010200_password_resets": m20261123010200,
  "20261123010300_session_authenticated_at": m20261123010300,
  "20261123020100_storage": m20261123020100,
  "20261123030100_secrets": m20261123030100,
  "20261123030200_node_templates": m20261123030200,
  "20261123040000_mcp_registry": m20261123040000,
  "20261123060000_flows": m20261123060000,
  "20261123060100_flow_steps": m20261123060100,
  "20261123070000_runs": m20261123070000,
  "20261123080000_gateways": m20261123080000,
  "20261123090000_delivery_ids_by_age": m20261123090000,
  "20261123120000_run_leases": m20261123120000,
  "20261125010000_gateway_subjects_any_case": m20261125010000,
  "20261125020000_run_steps": m20261125020000,
  "20261125030000_broker_usage": m20261125030000,
  "20261126010000_flow_on_failure": m20261126010000,
  "20261126020000_run_events": m20261126020000,
  "20261126030000_flow_schedules": m20261126030000,
  "20261126040000_flow_concurrency": m20261126040000,
  "20261126050000_flow_throttle": m20261126050000,
  "20261126060000_replay_jobs": m20261126060000,
  "20261126070000_run_trigger_search": m20261126070000,
  "20261126080000_account_run_retention": m20261126080000,
  "20261126090000_concurrency_held_slots": m20261126090000,
  "20261127010000_run_deliveries": m20261127010000,
  "20261127020000_runs_partition_bound": m20261127020000,
  "20261127020100_runs_partition_bound_validated": m20261127020100,
  "20261127020200_runs_partitioned": m20261127020200,
  "20261127020300_run_steps_reference_partitioned_runs": m20261127020300,
  "20261127020400_run_steps_partitioned": m20261127020400,
  "20261127030000_broker_lanes": m20261127030000,
  "20261128040000_flow_schedule_interval": m20261128040000,
  "20261128060000_queue_reason_codes": m20261128060000,
  "20261128070000_account_storage": m20261128070000,
  "20261128080000_broker_lane_waiting": m20261128080000,
  "20261129010000_run_end_reason": m20261129010000,
  "20261129020000_flow_rate_limit_singleton_start_timeout": m20261129020000,
  "20261129030000_flow_debounce_batch": m20261129030000,
  "20261129040000_flow_priority": m20261129040000,
  "20261130010000_flow_mcp_tool": m20261130010000,
  "20261130050000_run_traceparent": m20261130050000,
  "20261201000000_account_trace_run_data": m20261201000000,
  "20261202000000_runs_end_in_place": m20261202000000,
  "20261202000100_run_references_by_statement": m20261202000100,
  "20261202000200_broker_references_by_statement": m20261202000200,
  "20261203000000_rate_limit_turns": m20261203000000,
  "20261204000000_broker_hot_statements_as_functions": m20261204000000,
  "20261204000100_run_insert_as_function": m20261204000100,
  "20261205000000_rate_limit_tallies": m20261205000000,
  "20261205000100_singleton_judge": m20261205000100,
  "20261205000200_run_throttle_turn_numbers": m20261205000200,
  "20261207000000_debounce_judge": m20261207000000,
  "20261207000100_judges_generic_plans": m20261207000100,
  "20261207000200_batch_judge": m20261207000200,
  "20261208000000_runs_page": m20261208000000,
  "20261208000100_slot_take": m20261208000100,
  "20261209000000_throttle_turns": m20261209000000,
  "20261209000100_slot_hand_over": m20261209000100,
  "20261209000200_run_functions_index_plans": m20261209000200,
};
