import {
  createRootRoute,
  createRoute,
  createRouter,
  lazyRouteComponent,
  Outlet,
  redirect,
} from "@tanstack/react-router";
import { session } from "./api/client.ts";
import { AcceptInvitationPage } from "./pages/accept-invitation.tsx";
import { ApiKeysPage } from "./pages/api-keys.tsx";
import { FlowPage } from "./pages/flow.tsx";
import { FlowEditorPage } from "./pages/flow-editor.tsx";
import { FlowsPage } from "./pages/flows.tsx";
import { GatewaysPage } from "./pages/gateways.tsx";
import { MembersPage } from "./pages/members.tsx";
import { NodesPage } from "./pages/nodes.tsx";
import { ForgotPasswordPage, ResetPasswordPage } from "./pages/password.tsx";
import { RegistryPage } from "./pages/registry.tsx";
import { RunPage } from "./pages/run.tsx";
import { RunsPage } from "./pages/runs.tsx";
import { SecretsPage } from "./pages/secrets.tsx";
import { SecurityPage } from "./pages/security.tsx";
import { Shell } from "./pages/shell.tsx";
import { SignInPage } from "./pages/sign-in.tsx";
import { SignUpPage } from "./pages/sign-up.tsx";
import { StoragePage } from "./pages/storage.tsx";

const root = createRootRoute({ component: Outlet });

/** Every page under it needs a session: the one held, the one the cookie resumes, or sign-in. */
const signedIn = createRoute({
  getParentRoute: () => root,
  id: "signed-in",
  component: Shell,
  beforeLoad: async ({ location }) => {
    if (session.current || (await session.resume())) return;
    throw redirect({ to: "/console/sign-in", search: { redirect: location.href } });
  },
});

const home = createRoute({
  getParentRoute: () => root,
  path: "/console",
  beforeLoad: () => {
    throw redirect({ to: "/console/flows" });
  },
});

const routeTree = root.addChildren([
  home,
  createRoute({ getParentRoute: () => root, path: "/console/sign-in", component: SignInPage }),
  createRoute({ getParentRoute: () => root, path: "/console/sign-up", component: SignUpPage }),
  createRoute({ getParentRoute: () => root, path: "/console/password/forgot", component: ForgotPasswordPage }),
  // The two links mails carry: `{APP_URL}/password/reset#token=…`, `{APP_URL}/invitations/accept#token=…`.
  createRoute({ getParentRoute: () => root, path: "/password/reset", component: ResetPasswordPage }),
  createRoute({ getParentRoute: () => root, path: "/invitations/accept", component: AcceptInvitationPage }),
  signedIn.addChildren([
    createRoute({ getParentRoute: () => signedIn, path: "/console/flows", component: FlowsPage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/flows/new", component: FlowEditorPage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/flows/$flowId", component: FlowPage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/flows/$flowId/edit", component: FlowEditorPage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/runs", component: RunsPage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/runs/$runId", component: RunPage }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/metrics",
      // The charts (uPlot) load when the page is first opened, not with the sign-in page.
      component: lazyRouteComponent(() => import("./pages/metrics.tsx"), "MetricsPage"),
    }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/secrets", component: SecretsPage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/nodes", component: NodesPage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/storage", component: StoragePage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/gateways", component: GatewaysPage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/registry", component: RegistryPage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/api-keys", component: ApiKeysPage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/members", component: MembersPage }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/security", component: SecurityPage }),
  ]),
]);

export const router = createRouter({ routeTree, defaultPreload: false });

declare module "@tanstack/react-router" {
  interface Register {
    router: typeof router;
  }
}
