import { getRouteApi } from "@tanstack/react-router";
import { FilteredRuns } from "../ui/runs-table.tsx";

const route = getRouteApi("/signed-in/console/runs");

/** Every run of the account, live. */
export function RunsPage() {
  const search = route.useSearch();
  const navigate = route.useNavigate();
  return (
    <section>
      <h1>Runs</h1>
      <FilteredRuns search={search} onSearch={(next) => navigate({ to: ".", search: next, replace: true })} />
    </section>
  );
}
