import { FilteredRuns } from "../ui/runs-table.tsx";

/** Every run of the account, live. */
export function RunsPage() {
  return (
    <section>
      <h1>Runs</h1>
      <FilteredRuns />
    </section>
  );
}
