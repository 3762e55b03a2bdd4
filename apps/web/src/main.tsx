import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { RouterProvider } from "@tanstack/react-router";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
// With the page's own styles, so a page loaded later (Metrics) brings no stylesheet of its own.
import "uplot/dist/uPlot.min.css";
import { PlatformError, session } from "./api/client.ts";
import { router } from "./router.tsx";

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A refusal will not change by asking again; a lost connection may.
      retry: (count, error) =>
        count < 2 && !(error instanceof PlatformError && error.status >= 400 && error.status < 500),
      refetchOnWindowFocus: false,
    },
  },
});

// A session that stops working (ended on another device, a password reset) leads to sign-in,
// and back to this page afterwards.
session.onExpired(() => {
  const here = router.state.location;
  void router.navigate({ to: "/console/sign-in", search: { redirect: here.href } });
});

const root = document.getElementById("root");
if (!root) throw new Error("the page has no #root");
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
