import type { RouterInputs } from "@platform/client";
import { useSuspenseQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { memberQueries } from "../api/queries.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { CopyButton } from "../ui/copy-button.tsx";
import { EmailField } from "../ui/credential-fields.tsx";
import { Field, Notice } from "../ui/form.tsx";
import { ListPage, useListChange } from "../ui/list-page.tsx";
import { problemOf } from "../ui/problem.ts";

type Role = RouterInputs["accounts"]["users"]["create"]["role"];
const ROLES = ["member", "admin"] as const satisfies readonly Role[];

export function MembersPage() {
  const list = memberQueries.list();
  const users = useSuspenseQuery(list).data.data;
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("member");
  const invite = useListChange(
    list,
    () => api.accounts.users.create.mutate({ email, role }),
    () => setEmail(""),
  );
  const problem = invite.error ? problemOf(invite.error) : null;
  const invitation = invite.data?.data.invitation;
  return (
    <ListPage
      title="Members"
      list={list}
      rows={users}
      rowKey={(user) => user.email}
      columns={[
        { header: "Email", cell: (user) => user.email },
        { header: "Name", cell: (user) => user.display_name },
        { header: "Role", cell: (user) => user.role },
        { header: "Status", cell: (user) => (user.status === "invited" ? "invited (pending)" : "active") },
      ]}
      remove={{
        what: (user) => user.email,
        verb: (user) => (user.status === "invited" ? "Revoke" : "Remove"),
        removable: (user) => user.role !== "owner",
        run: (user) => api.accounts.users.remove.mutate({ email: user.email }),
      }}
      empty="No members yet."
    >
      <ActionForm
        className="inline-form"
        onSubmit={invite.mutate}
        pending={invite.isPending}
        problem={problem}
        submitLabel="Invite"
      >
        <EmailField own={false} error={problem?.fields.email} value={email} onChange={setEmail} />
        <Field label="Role" error={problem?.fields.role}>
          {(input) => (
            <select {...input} value={role} onChange={(e) => setRole(ROLES.find((r) => r === e.target.value) ?? role)}>
              {ROLES.map((r) => (
                <option key={r}>{r}</option>
              ))}
            </select>
          )}
        </Field>
      </ActionForm>
      {invitation && (
        <Notice>
          Invitation ready; mailed when the platform has SMTP. The link works until{" "}
          {new Date(invitation.expires * 1000).toLocaleString()}: <CopyButton text={invitation.url} label="Copy link" />
        </Notice>
      )}
    </ListPage>
  );
}
