import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { CopyButton } from "../ui/copy-button.tsx";
import { DeleteButton, Field, FormProblem, Notice, TextField } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";

export function MembersPage() {
  const queryClient = useQueryClient();
  const users = useQuery({ queryKey: ["users"], queryFn: () => api.accounts.users.list.query() });
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<"member" | "admin">("member");
  const inviteUser = useMutation({
    mutationFn: () => api.accounts.users.create.mutate({ email, role }),
    onSuccess: async () => {
      setEmail("");
      await queryClient.invalidateQueries({ queryKey: ["users"] });
    },
  });
  const remove = useMutation({
    mutationFn: (who: string) => api.accounts.users.remove.mutate({ email: who }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["users"] }),
  });
  const problem = inviteUser.error ? problemOf(inviteUser.error) : null;
  const invitation = inviteUser.data?.data.invitation;
  return (
    <section>
      <h1>Members</h1>
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          inviteUser.mutate();
        }}
      >
        <FormProblem problem={problem} />
        <TextField
          label="Email"
          error={problem?.fields.email}
          name="email"
          type="email"
          value={email}
          onChange={setEmail}
          required
        />
        <Field label="Role" error={problem?.fields.role}>
          {(input) => (
            <select {...input} value={role} onChange={(e) => setRole(e.target.value as "member" | "admin")}>
              <option value="member">member</option>
              <option value="admin">admin</option>
            </select>
          )}
        </Field>
        <button type="submit" disabled={inviteUser.isPending}>
          Invite
        </button>
      </form>
      {invitation && (
        <Notice>
          Invitation ready; mailed when the platform has SMTP. The link works until{" "}
          {new Date(invitation.expires * 1000).toLocaleString()}: <CopyButton text={invitation.url} label="Copy link" />
        </Notice>
      )}
      {remove.error && <div role="alert">{problemOf(remove.error).message}</div>}
      {users.error && <div role="alert">{problemOf(users.error).message}</div>}
      {users.data && (
        <table>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              <th scope="col">Status</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {users.data.data.map((user) => (
              <tr key={user.email}>
                <td>{user.email}</td>
                <td>{user.display_name}</td>
                <td>{user.role}</td>
                <td>{user.status === "invited" ? "invited (pending)" : "active"}</td>
                <td>
                  {user.role !== "owner" && (
                    <DeleteButton
                      what={user.email}
                      verb={user.status === "invited" ? "Revoke" : "Remove"}
                      onClick={() => remove.mutate(user.email)}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
