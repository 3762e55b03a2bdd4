import { Link, Outlet, useNavigate } from "@tanstack/react-router";
import { useSyncExternalStore } from "react";
import { session } from "../api/client.ts";

const subscribe = (listener: () => void) => session.subscribe(listener);
const current = () => session.current;

/** The frame of every signed-in page: the account, the areas, and signing out. */
export function Shell() {
  const signedIn = useSyncExternalStore(subscribe, current);
  const navigate = useNavigate();
  return (
    <div className="shell">
      <header>
        <a className="skip" href="#content">
          Skip to content
        </a>
        <span className="brand">Workflow Platform</span>
        <nav aria-label="Areas">
          <Link to="/console/flows">Flows</Link>
          <Link to="/console/runs">Runs</Link>
          <Link to="/console/metrics">Metrics</Link>
          <Link to="/console/secrets">Secrets</Link>
          <Link to="/console/nodes">Nodes</Link>
          <Link to="/console/storage">Storage</Link>
          <Link to="/console/gateways">Gateways</Link>
          <Link to="/console/registry">MCP registry</Link>
          <Link to="/console/api-keys">API keys</Link>
          <Link to="/console/members">Members</Link>
          <Link to="/console/security">Security</Link>
        </nav>
        <span className="account">{signedIn?.account.display_name}</span>
        <button
          type="button"
          className="secondary"
          onClick={async () => {
            await session.signOut();
            await navigate({ to: "/console/sign-in" });
          }}
        >
          Sign out
        </button>
      </header>
      <main id="content">
        <Outlet />
      </main>
    </div>
  );
}
