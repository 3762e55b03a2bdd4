import { useQueryErrorResetBoundary } from "@tanstack/react-query";
import { type ErrorComponentProps, useRouter } from "@tanstack/react-router";
import { useEffect } from "react";
import { problemOf } from "./problem.ts";

/** A page whose data could not be loaded: why, as a person can act on it, and a way to try again. */
export function RouteError({ error }: ErrorComponentProps) {
  const router = useRouter();
  const queries = useQueryErrorResetBoundary();
  // The failed queries are asked again when the page is.
  useEffect(() => queries.reset(), [queries]);
  return (
    <div role="alert" className="problem">
      <p>{problemOf(error).message}</p>
      <button type="button" className="secondary" onClick={() => void router.invalidate()}>
        Try again
      </button>
    </div>
  );
}

/** A page waiting for its data (shown only when that takes a while). */
export function RoutePending() {
  return <p aria-busy="true">Loading…</p>;
}
