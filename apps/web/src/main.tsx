import { QueryClientProvider } from "@tanstack/react-query";
import { RouterProvider } from "@tanstack/react-router";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
// With the page's own styles, so a page loaded later (Metrics) brings no stylesheet of its own.
import "uplot/dist/uPlot.min.css";
import { session } from "./api/client.ts";
import { queryClient } from "./api/query-client.ts";
import { router } from "./router.tsx";

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
