import type { QueryClient } from "@tanstack/react-query";
import {
  createRootRouteWithContext,
  createRoute,
  createRouter,
  lazyRouteComponent,
  Outlet,
  redirect,
} from "@tanstack/react-router";
import { session } from "./api/client.ts";
import {
  apiKeyQueries,
  flowQueries,
  gatewayQueries,
  memberQueries,
  nodeQueries,
  registryQueries,
  runQueries,
  secretQueries,
} from "./api/queries.ts";
import { queryClient } from "./api/query-client.ts";
import { AcceptInvitationPage } from "./pages/accept-invitation.tsx";
import { ApiKeysPage } from "./pages/api-keys.tsx";
import { FlowPage } from "./pages/flow.tsx";
import { EditFlowPage, NewFlowPage } from "./pages/flow-editor.tsx";
import { FlowsPage } from "./pages/flows.tsx";
import { GatewaysPage } from "./pages/gateways.tsx";
import { addStepSearch } from "./pages/mcp-step.ts";
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
import { RouteError, RoutePending } from "./ui/route-states.tsx";
import { runFilterSearch } from "./ui/run-filter.ts";

/**
 * Every page is a route here. A page that shows data from the start has a `loader` that asks
 * the API for it as the page opens (`fetchQuery`: afresh, not what an earlier page left in
 * the cache) and puts it in the query cache, where the page reads it and keeps it fresh;
 * every route says what it shows while that loads and when it fails.
 */
const states = { errorComponent: RouteError, pendingComponent: RoutePending };

const root = createRootRouteWithContext<{ queryClient: QueryClient }>()({ component: Outlet, ...states });

/** Every page under it needs a session: the one held, the one the cookie resumes, or sign-in. */
const signedIn = createRoute({
  getParentRoute: () => root,
  id: "signed-in",
  component: Shell,
  ...states,
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

/** `?redirect=`: where sign-in goes afterwards (`signInTarget` decides whether it may). */
const signInSearch = (search: Record<string, unknown>): { redirect?: string } =>
  typeof search.redirect === "string" ? { redirect: search.redirect } : {};

const routeTree = root.addChildren([
  home,
  createRoute({
    getParentRoute: () => root,
    path: "/console/sign-in",
    validateSearch: signInSearch,
    component: SignInPage,
    ...states,
  }),
  createRoute({ getParentRoute: () => root, path: "/console/sign-up", component: SignUpPage, ...states }),
  createRoute({
    getParentRoute: () => root,
    path: "/console/password/forgot",
    component: ForgotPasswordPage,
    ...states,
  }),
  // The two links mails carry: `{APP_URL}/password/reset#token=…`, `{APP_URL}/invitations/accept#token=…`.
  createRoute({ getParentRoute: () => root, path: "/password/reset", component: ResetPasswordPage, ...states }),
  createRoute({
    getParentRoute: () => root,
    path: "/invitations/accept",
    component: AcceptInvitationPage,
    ...states,
  }),
  signedIn.addChildren([
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/flows",
      loader: ({ context }) => context.queryClient.fetchQuery(flowQueries.list()),
      component: FlowsPage,
      ...states,
    }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/flows/new",
      validateSearch: addStepSearch,
      component: NewFlowPage,
      ...states,
    }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/flows/$flowId",
      validateSearch: runFilterSearch,
      loader: ({ context, params }) => context.queryClient.fetchQuery(flowQueries.one(params.flowId)),
      component: FlowPage,
      ...states,
    }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/flows/$flowId/edit",
      validateSearch: addStepSearch,
      loader: ({ context, params }) => context.queryClient.fetchQuery(flowQueries.one(params.flowId)),
      component: EditFlowPage,
      ...states,
    }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/runs",
      validateSearch: runFilterSearch,
      component: RunsPage,
      ...states,
    }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/runs/$runId",
      loader: ({ context, params }) => context.queryClient.fetchQuery(runQueries.one(params.runId)),
      component: RunPage,
      ...states,
    }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/metrics",
      // The charts (uPlot) load when the page is first opened, not with the sign-in page.
      component: lazyRouteComponent(() => import("./pages/metrics.tsx"), "MetricsPage"),
      ...states,
    }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/secrets",
      loader: ({ context }) => context.queryClient.fetchQuery(secretQueries.list()),
      component: SecretsPage,
      ...states,
    }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/nodes",
      loader: ({ context }) => context.queryClient.fetchQuery(nodeQueries.list()),
      component: NodesPage,
      ...states,
    }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/storage", component: StoragePage, ...states }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/gateways",
      loader: ({ context }) =>
        Promise.all([
          context.queryClient.fetchQuery(gatewayQueries.list()),
          context.queryClient.fetchQuery(flowQueries.list()),
        ]),
      component: GatewaysPage,
      ...states,
    }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/registry",
      loader: ({ context }) => context.queryClient.fetchQuery(registryQueries.search("")),
      component: RegistryPage,
      ...states,
    }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/api-keys",
      loader: ({ context }) => context.queryClient.fetchQuery(apiKeyQueries.list()),
      component: ApiKeysPage,
      ...states,
    }),
    createRoute({
      getParentRoute: () => signedIn,
      path: "/console/members",
      loader: ({ context }) => context.queryClient.fetchQuery(memberQueries.list()),
      component: MembersPage,
      ...states,
    }),
    createRoute({ getParentRoute: () => signedIn, path: "/console/security", component: SecurityPage, ...states }),
  ]),
]);

export const router = createRouter({
  routeTree,
  context: { queryClient },
  defaultPreload: false,
  // The query cache decides what is fresh, not the router's own.
  defaultPreloadStaleTime: 0,
});

declare module "@tanstack/react-router" {
  interface Register {
    router: typeof router;
  }
}
