import type { ReactNode } from "react";

/** The frame of every page a person sees before signing in. */
export function AuthCard({ title, children, footer }: { title: string; children: ReactNode; footer?: ReactNode }) {
  return (
    <main className="auth">
      <div className="card">
        <p className="brand">Workflow Platform</p>
        <h1>{title}</h1>
        {children}
        {footer && <div className="card-footer">{footer}</div>}
      </div>
    </main>
  );
}

/** The token a mailed link carries after `#token=`: never sent to a server by the browser. */
export function tokenFromHash(): string {
  return new URLSearchParams(location.hash.slice(1)).get("token") ?? "";
}
