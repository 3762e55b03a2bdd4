import { describe, expect, test } from "bun:test";

import { bearer, logIn, PASSWORD, readBody, signUp, uniqueEmail } from "./accounts-helpers.ts";
import { acceptInvitation, addMember, invite } from "./accounts-members.ts";
import { describeOnEachDatabase } from "./harness.ts";
import { invalidInput } from "./invalid-input.ts";

/** What an API key is answered on administration for people only (inviting, the account's settings). */
const SIGNED_IN_ONLY = "this operation needs a signed-in user (Bearer token), not an API key";

describeOnEachDatabase("accounts: users and API keys", {}, (suite) => {
  const listUsers = (headers: Record<string, string>) => suite.api.request("/accounts/users", { headers });
  const addUser = (token: string, json: unknown) =>
    suite.api.request("/accounts/users", { method: "POST", headers: bearer(token), json });
  const removeUser = (token: string, email: string) =>
    suite.api.request("/accounts/remove-user", { method: "DELETE", headers: bearer(token), json: { email } });
  const createKey = (headers: Record<string, string>, json: unknown) =>
    suite.api.request("/accounts/api-keys", { method: "POST", headers, json });

  test("an owner invites an admin and a member; everyone in the account sees members and pending invitations", async () => {
    const owner = await signUp(suite.api, "team-owner", { display_name: "Olga" });
    const adminEmail = uniqueEmail("team-admin");
    const token = await invite(suite.api, owner.auth.auth_token, adminEmail, "admin");
    const accepted = await acceptInvitation(suite.api, { token, password: PASSWORD, display_name: "Adam" });
    expect(accepted.status).toBe(200);
    const member = await addMember(suite.api, owner.auth.auth_token, "team-member", "member");
    expect(member.auth.account.id).toBe(owner.auth.account.id);
    const pendingEmail = uniqueEmail("team-pending");
    const invited = await addUser(owner.auth.auth_token, { email: pendingEmail, role: "member" });
    const { expires } = (await readBody(invited)).data.invitation;

    const expected = {
      data: [
        { email: owner.email, role: "owner", display_name: "Olga", status: "active" },
        { email: adminEmail, role: "admin", display_name: "Adam", status: "active" },
        { email: member.email, role: "member", display_name: member.email.split("@")[0], status: "active" },
        { email: pendingEmail, role: "member", display_name: "", status: "invited", expires },
      ],
    };
    expect(await readBody(await listUsers(bearer(owner.auth.auth_token)))).toEqual(expected);
    expect(await readBody(await listUsers(bearer(member.auth.auth_token)))).toEqual(expected);
  });

  test("inviting: members may not, members conflict, a password or the owner role is refused", async () => {
    const owner = await signUp(suite.api, "add-rules");
    const member = await addMember(suite.api, owner.auth.auth_token, "add-member", "member");

    const byMember = await addUser(member.auth.auth_token, { email: uniqueEmail("x"), role: "member" });
    expect(byMember.status).toBe(403);
    expect(await readBody(byMember)).toEqual({ error: "only owners and admins can invite users" });

    const duplicate = await addUser(owner.auth.auth_token, { email: member.email, role: "admin" });
    expect(duplicate.status).toBe(409);
    expect(await readBody(duplicate)).toEqual({ error: "this user is already a member of the account" });

    const withPassword = await addUser(owner.auth.auth_token, {
      email: uniqueEmail("pw"),
      password: PASSWORD,
      role: "member",
    });
    expect(withPassword.status).toBe(400);
    expect(await readBody(withPassword)).toEqual(
      invalidInput(["password", "is no longer accepted: the invitee sets their own when accepting the invitation"]),
    );
    for (const json of [
      { email: uniqueEmail("owner"), role: "owner" },
      { email: "nope", role: "member" },
      { email: uniqueEmail("norole") },
    ]) {
      const response = await addUser(owner.auth.auth_token, json);
      expect(response.status).toBe(400);
      expect(Object.keys(await readBody(response))).toEqual(["error", "problems"]);
    }
  });

  test("removing users: owners and admins only, never the root user", async () => {
    const owner = await signUp(suite.api, "rm-owner");
    const admin = await addMember(suite.api, owner.auth.auth_token, "rm-admin", "admin");
    const member = await addMember(suite.api, owner.auth.auth_token, "rm-member", "member");

    const byMember = await removeUser(member.auth.auth_token, admin.email);
    expect(byMember.status).toBe(403);
    expect(await readBody(byMember)).toEqual({ error: "only owners and admins can remove users" });

    const root = await removeUser(admin.auth.auth_token, owner.email);
    expect(root.status).toBe(403);
    expect(await readBody(root)).toEqual({ error: "the root user cannot be removed" });
    expect((await removeUser(owner.auth.auth_token, owner.email)).status).toBe(403);

    const unknown = await removeUser(owner.auth.auth_token, uniqueEmail("ghost"));
    expect(unknown.status).toBe(404);
    expect(await readBody(unknown)).toEqual({ error: "no user with this email in this account" });

    // The email may also travel as a query parameter.
    const removed = await suite.api.request(`/accounts/remove-user?email=${encodeURIComponent(member.email)}`, {
      method: "DELETE",
      headers: bearer(admin.auth.auth_token),
    });
    expect(removed.status).toBe(200);
    expect(await readBody(removed)).toEqual({ message: "success" });
    const users = await readBody(await listUsers(bearer(owner.auth.auth_token)));
    expect(users.data.map((user: { email: string }) => user.email)).toEqual([owner.email, admin.email]);
  });

  test("a removed user's access token, refresh token and API keys stop working at once", async () => {
    const owner = await signUp(suite.api, "gone-owner");
    const member = await addMember(suite.api, owner.auth.auth_token, "gone-member", "member");
    const key = (await readBody(await createKey(bearer(member.auth.auth_token), { name: "laptop" }))).data.key;
    expect((await listUsers(bearer(member.auth.auth_token))).status).toBe(200);
    expect((await listUsers({ "x-api-key": key })).status).toBe(200);

    expect((await removeUser(owner.auth.auth_token, member.email)).status).toBe(200);

    const token = await listUsers(bearer(member.auth.auth_token));
    expect(token.status).toBe(401);
    expect(await readBody(token)).toEqual({ error: "invalid credential" });
    expect((await listUsers({ "x-api-key": key })).status).toBe(401);
    const refresh = await suite.api.request("/accounts/refresh", {
      method: "POST",
      json: { refresh_token: member.auth.refresh_token },
    });
    expect(refresh.status).toBe(401);
    // Belonging to no account any more, they cannot sign in either.
    expect((await logIn(suite.api, member.email)).status).toBe(401);
  });

  test("an API key is shown once, listed by prefix, accepted as X-Api-Key, and dead once deleted", async () => {
    const owner = await signUp(suite.api, "keys");
    const created = await createKey(bearer(owner.auth.auth_token), { name: "deploy bot" });
    expect(created.status).toBe(200);
    const { data } = await readBody(created);
    expect(Object.keys(data).sort()).toEqual(["allowed_paths", "id", "key", "name"]);
    expect(data).toMatchObject({ name: "deploy bot", allowed_paths: null });

    const listing = await readBody(
      await suite.api.request("/accounts/api-keys", { headers: { "x-api-key": data.key } }),
    );
    expect(listing.data).toHaveLength(1);
    const [entry] = listing.data;
    expect(Object.keys(entry).sort()).toEqual(["allowed_paths", "created", "id", "name", "prefix"]);
    expect(entry).toMatchObject({ id: data.id, name: "deploy bot", allowed_paths: null });
    expect(data.key.startsWith(entry.prefix)).toBe(true);
    expect(entry.prefix.length).toBeLessThan(data.key.length / 2);
    expect(Math.abs(entry.created - Date.now() / 1000)).toBeLessThan(3600);
    expect(JSON.stringify(listing)).not.toContain(data.key);

    const users = await listUsers({ "x-api-key": data.key });
    expect(users.status).toBe(200);
    expect((await readBody(users)).data[0].email).toBe(owner.email);

    const deleted = await suite.api.request(`/accounts/api-keys/${data.id}`, {
      method: "DELETE",
      headers: bearer(owner.auth.auth_token),
    });
    expect(deleted.status).toBe(200);
    expect(await readBody(deleted)).toEqual({ message: "success" });
    const refused = await listUsers({ "x-api-key": data.key });
    expect(refused.status).toBe(401);
    expect(await readBody(refused)).toEqual({ error: "invalid credential" });
    expect((await listUsers({ "x-api-key": "wfk_unknown" })).status).toBe(401);
    const again = await suite.api.request(`/accounts/api-keys/${data.id}`, {
      method: "DELETE",
      headers: bearer(owner.auth.auth_token),
    });
    expect(again.status).toBe(404);
  });

  test("a key restricted to paths is refused with 403 elsewhere", async () => {
    const owner = await signUp(suite.api, "restricted");
    const created = await createKey(bearer(owner.auth.auth_token), {
      name: "reader",
      allowed_paths: ["/accounts/users", "/accounts/api-keys*"],
    });
    const { data } = await readBody(created);
    expect(data.allowed_paths).toEqual(["/accounts/users", "/accounts/api-keys*"]);
    const headers = { "x-api-key": data.key };

    expect((await listUsers(headers)).status).toBe(200);
    expect((await suite.api.request("/accounts/api-keys", { headers })).status).toBe(200);
    const prices = await suite.api.request("/accounts/payment/prices", { headers });
    expect(prices.status).toBe(403);
    expect(await readBody(prices)).toEqual({ error: "this API key is not allowed on this path" });

    // Even on an allowed path, a key cannot mint keys unless its paths name that, with the method.
    const escalate = await createKey(headers, { name: "broader" });
    expect(escalate.status).toBe(403);
    expect(await readBody(escalate)).toEqual({
      error:
        'account administration needs a signed-in user, or an API key whose allowed_paths name "POST /accounts/api-keys"',
    });
  });

  test("a trailing slash, which routing ignores, does not carry a restricted key past its pattern", async () => {
    const owner = await signUp(suite.api, "slash");
    const create = async (allowed_paths: string[]) =>
      (await readBody(await createKey(bearer(owner.auth.auth_token), { name: "k", allowed_paths }))).data;
    // Meant for deleting keys by id, not for listing every key of the account.
    const deleter = await create(["/accounts/api-keys/*"]);
    for (const path of ["/accounts/api-keys", "/accounts/api-keys/"]) {
      const response = await suite.api.request(path, { headers: { "x-api-key": deleter.key } });
      expect(response.status).toBe(403);
      expect(await readBody(response)).toEqual({ error: "this API key is not allowed on this path" });
    }
    // A literal pattern allows its path with the slash routing ignores.
    const reader = await create(["/accounts/users"]);
    expect((await listUsers({ "x-api-key": reader.key })).status).toBe(200);
    expect((await suite.api.request("/accounts/users/", { headers: { "x-api-key": reader.key } })).status).toBe(200);
  });

  test("an encoded slash does not make a path look like the one a restricted key names", async () => {
    const owner = await signUp(suite.api, "encoded");
    const created = await createKey(bearer(owner.auth.auth_token), {
      name: "mappings of orders",
      allowed_paths: ["/gateway/orders/mapping*"],
    });
    const headers = { "x-api-key": (await readBody(created)).data.key };
    // Routing reads this as the gateway "orders/mapping", which the key was not given.
    const response = await suite.api.request("/gateway/orders%2Fmapping", { headers });
    expect(response.status).toBe(403);
    expect(await readBody(response)).toEqual({ error: "this API key is not allowed on this path" });
  });

  test("over tRPC a restricted key reaches no more than over REST", async () => {
    const owner = await signUp(suite.api, "trpc-key");
    const create = async (name: string, allowed_paths?: string[]) =>
      (await readBody(await createKey(bearer(owner.auth.auth_token), { name, allowed_paths }))).data;
    const victim = await create("victim");
    // A pattern copied from the API reference names the key whose id is "{id}", no other.
    const copied = await create("copied", ["/accounts/api-keys/{id}"]);
    const rest = await suite.api.request(`/accounts/api-keys/${victim.id}`, {
      method: "DELETE",
      headers: { "x-api-key": copied.key },
    });
    expect(rest.status).toBe(403);
    const deleteOverTrpc = (key: string) =>
      suite.api.request("/trpc/accounts.apiKeys.delete", {
        method: "POST",
        headers: { "x-api-key": key },
        json: { id: victim.id },
      });
    const trpc = await deleteOverTrpc(copied.key);
    expect(trpc.status).toBe(403);
    expect((await readBody(trpc)).error.message).toBe("this API key is not allowed on this path");
    expect((await listUsers({ "x-api-key": victim.key })).status).toBe(200);

    // A pattern that allows every id reaches the call; deleting a key administers the account,
    // so only one that names the operation with its method may make it.
    const reaching = await create("reaching", ["/accounts/api-keys/*"]);
    const unnamed = await deleteOverTrpc(reaching.key);
    expect(unnamed.status).toBe(403);
    expect((await readBody(unnamed)).error.message).toStartWith("account administration needs a signed-in user");
    const deleter = await create("deleter", ["DELETE /accounts/api-keys/*"]);
    expect((await deleteOverTrpc(deleter.key)).status).toBe(200);
    expect((await listUsers({ "x-api-key": victim.key })).status).toBe(401);
  });

  test("/hub/agent paths are reached by a restricted key only when it names them", async () => {
    const owner = await signUp(suite.api, "agent");
    const keyFor = async (allowed_paths?: string[]) =>
      (await readBody(await createKey(bearer(owner.auth.auth_token), { name: "k", allowed_paths }))).data.key as string;
    const [everything, hub, agent, unrestricted] = await Promise.all([
      keyFor(["/*"]),
      keyFor(["/hub/*"]),
      keyFor(["/hub/agent*"]),
      keyFor(undefined),
    ]);
    // No /hub/agent route exists yet, so the check is asked of the server's authenticator directly.
    const reach = (key: string, path: string) =>
      suite.api.services.authenticate({ scheme: "api_key", key }, { method: "GET", path }).then(
        (principal) => principal.accountId,
        (error: { code: string }) => error.code,
      );
    expect(await reach(everything, "/hub/agent/chat")).toBe("forbidden");
    expect(await reach(hub, "/hub/agent")).toBe("forbidden");
    expect(await reach(hub, "/hub/nodes")).toBe(owner.auth.account.id);
    expect(await reach(agent, "/hub/agent/chat")).toBe(owner.auth.account.id);
    expect(await reach(unrestricted, "/hub/agent/chat")).toBe(owner.auth.account.id);
  });

  test("malformed key requests are 400", async () => {
    const owner = await signUp(suite.api, "badkeys");
    for (const json of [
      {},
      { name: "" },
      { name: "x", allowed_paths: [] },
      { name: "x", allowed_paths: ["no-slash"] },
      { name: "x", allowed_paths: ["/a*b"] },
    ]) {
      const response = await createKey(bearer(owner.auth.auth_token), json);
      expect(response.status).toBe(400);
      expect(Object.keys(await readBody(response))).toEqual(["error", "problems"]);
    }
  });

  test("members see and delete only their own keys; owners see and delete all", async () => {
    const owner = await signUp(suite.api, "keyperm");
    const member = await addMember(suite.api, owner.auth.auth_token, "keyperm-member", "member");
    const ownerKey = (await readBody(await createKey(bearer(owner.auth.auth_token), { name: "owner's" }))).data;
    const memberKey = (await readBody(await createKey(bearer(member.auth.auth_token), { name: "member's" }))).data;
    const names = async (token: string) =>
      (await readBody(await suite.api.request("/accounts/api-keys", { headers: bearer(token) }))).data.map(
        (key: { name: string }) => key.name,
      );
    expect(await names(owner.auth.auth_token)).toEqual(["owner's", "member's"]);
    expect(await names(member.auth.auth_token)).toEqual(["member's"]);

    const memberDeletesOwners = await suite.api.request(`/accounts/api-keys/${ownerKey.id}`, {
      method: "DELETE",
      headers: bearer(member.auth.auth_token),
    });
    expect(memberDeletesOwners.status).toBe(404);
    const ownerDeletesMembers = await suite.api.request(`/accounts/api-keys/${memberKey.id}`, {
      method: "DELETE",
      headers: bearer(owner.auth.auth_token),
    });
    expect(ownerDeletesMembers.status).toBe(200);
  });

  describe("administration: no credential mints one that reaches further than itself", () => {
    const keyOf = async (token: string, allowed_paths?: string[]) =>
      (await readBody(await createKey(bearer(token), { name: "k", allowed_paths }))).data as {
        id: string;
        key: string;
      };
    const inviteWith = (headers: Record<string, string>, role: string) =>
      suite.api.request("/accounts/users", { method: "POST", headers, json: { email: uniqueEmail("by-key"), role } });

    test("the README's key on /accounts/users cannot invite an admin and take the account over", async () => {
      const owner = await signUp(suite.api, "takeover");
      await suite.api.request("/secrets/db", {
        method: "PUT",
        headers: bearer(owner.auth.auth_token),
        json: { value: "s3cret" },
      });
      const { key } = await keyOf(owner.auth.auth_token, ["/accounts/users"]);
      const attempt = await inviteWith({ "x-api-key": key }, "admin");
      expect(attempt.status).toBe(403);
      expect(await readBody(attempt)).toEqual({ error: SIGNED_IN_ONLY });
      // It still reads what it was made for.
      expect((await listUsers({ "x-api-key": key })).status).toBe(200);
    });

    test("methods restrict a key: GET /accounts/users reads the users and nothing else, over REST and tRPC", async () => {
      const owner = await signUp(suite.api, "methods");
      const { key } = await keyOf(owner.auth.auth_token, ["GET /accounts/users", "GET,PUT /secrets/app-*"]);
      const headers = { "x-api-key": key };
      expect((await listUsers(headers)).status).toBe(200);
      expect((await inviteWith(headers, "member")).status).toBe(403);
      const trpcInvite = await suite.api.request("/trpc/accounts.users.create", {
        method: "POST",
        headers,
        json: { email: uniqueEmail("trpc"), role: "member" },
      });
      expect(trpcInvite.status).toBe(403);
      expect((await suite.api.request("/trpc/accounts.users.list", { headers })).status).toBe(200);
      const put = await suite.api.request("/secrets/app-token", { method: "PUT", headers, json: { value: "v" } });
      expect(put.status).toBe(200);
      expect((await suite.api.request("/secrets/app-token", { headers })).status).toBe(200);
      expect((await suite.api.request("/secrets/app-token", { method: "DELETE", headers })).status).toBe(403);
      // HEAD is read as GET.
      expect((await suite.api.request("/secrets/app-token", { method: "HEAD", headers })).status).toBe(200);
    });

    test("a key never invites, not even one naming POST /accounts/users: the invitation's token would be a member's session", async () => {
      const owner = await signUp(suite.api, "inviter");
      const named = await keyOf(owner.auth.auth_token, ["POST /accounts/users", "GET /accounts/users"]);
      const unrestricted = await keyOf(owner.auth.auth_token);
      for (const key of [named.key, unrestricted.key]) {
        const headers = { "x-api-key": key };
        for (const role of ["member", "admin"]) {
          const attempt = await inviteWith(headers, role);
          expect({ role, status: attempt.status, body: await readBody(attempt) }).toEqual({
            role,
            status: 403,
            body: { error: SIGNED_IN_ONLY },
          });
        }
        const trpc = await suite.api.request("/trpc/accounts.users.create", {
          method: "POST",
          headers,
          json: { email: uniqueEmail("trpc-by-key"), role: "member" },
        });
        expect({ status: trpc.status, message: (await readBody(trpc)).error?.message }).toEqual({
          status: 403,
          message: SIGNED_IN_ONLY,
        });
      }
      // No invitation was made, so there is no token to accept for a session.
      const users = await readBody(await listUsers({ "x-api-key": named.key }));
      expect(users.data.map((user: { status: string }) => user.status)).toEqual(["active"]);
      // The person signed in invites as always.
      expect((await inviteWith(bearer(owner.auth.auth_token), "member")).status).toBe(200);
    });

    test("an unrestricted key acts as its creator, but administers nothing; a signed-in admin does", async () => {
      const owner = await signUp(suite.api, "unrestricted");
      const { key, id } = await keyOf(owner.auth.auth_token);
      const headers = { "x-api-key": key };
      expect((await inviteWith(headers, "member")).status).toBe(403);
      expect((await createKey(headers, { name: "child", allowed_paths: ["GET /accounts/users"] })).status).toBe(403);
      expect((await suite.api.request(`/accounts/api-keys/${id}`, { method: "DELETE", headers })).status).toBe(403);
      expect((await inviteWith(bearer(owner.auth.auth_token), "admin")).status).toBe(200);
    });

    test("a key made by a key is at least as restricted as its maker", async () => {
      const owner = await signUp(suite.api, "maker");
      const maker = await keyOf(owner.auth.auth_token, ["POST /accounts/api-keys", "GET,PUT /storage/kv/orders/*"]);
      const headers = { "x-api-key": maker.key };
      const within = await createKey(headers, { name: "reader", allowed_paths: ["GET /storage/kv/orders/keys/*"] });
      expect(within.status).toBe(200);
      // Its own reach, the right to make keys included, is within it.
      const twin = await createKey(headers, { name: "twin", allowed_paths: ["POST /accounts/api-keys"] });
      expect(twin.status).toBe(200);
      for (const [allowed_paths, wider] of [
        [undefined, undefined],
        [["/storage/kv/orders/*"], "/storage/kv/orders/*"],
        [["GET,DELETE /storage/kv/orders/*"], "GET,DELETE /storage/kv/orders/*"],
        [["GET /storage/kv/*"], "GET /storage/kv/*"],
        [["POST /accounts/users"], "POST /accounts/users"],
      ] as const) {
        const answered = await createKey(headers, { name: "wider", allowed_paths });
        expect({ allowed_paths, status: answered.status, body: await readBody(answered) }).toEqual({
          allowed_paths,
          status: 403,
          body: {
            error: wider
              ? `"${wider}" reaches further than this API key's own allowed_paths`
              : "an API key can only create keys restricted to its own paths",
          },
        });
      }
    });

    test("allowed_paths entries are checked: methods are named in capitals, one space before the path", async () => {
      const owner = await signUp(suite.api, "entries");
      for (const entry of ["get /x", "GET  /x", "FETCH /x", "GET,/x", "GET /x/*/y"]) {
        const answered = await createKey(bearer(owner.auth.auth_token), { name: "k", allowed_paths: [entry] });
        expect({ entry, status: answered.status }).toEqual({ entry, status: 400 });
      }
    });
  });

  test("one account never sees or touches another's users or keys", async () => {
    const alpha = await signUp(suite.api, "alpha");
    const alphaMember = await addMember(suite.api, alpha.auth.auth_token, "alpha-member", "member");
    const alphaKey = (await readBody(await createKey(bearer(alpha.auth.auth_token), { name: "alpha key" }))).data;
    const beta = await signUp(suite.api, "beta");
    const betaToken = bearer(beta.auth.auth_token);

    expect(await readBody(await listUsers(betaToken))).toEqual({
      data: [{ email: beta.email, role: "owner", display_name: beta.email.split("@")[0], status: "active" }],
    });
    expect((await readBody(await suite.api.request("/accounts/api-keys", { headers: betaToken }))).data).toEqual([]);
    expect(
      (await suite.api.request(`/accounts/api-keys/${alphaKey.id}`, { method: "DELETE", headers: betaToken })).status,
    ).toBe(404);
    expect((await removeUser(beta.auth.auth_token, alphaMember.email)).status).toBe(404);
    const passkeys = await suite.api.request("/accounts/all-passkeys", {
      method: "DELETE",
      headers: betaToken,
      json: { email: alphaMember.email },
    });
    expect(passkeys.status).toBe(404);

    // Alpha's things are intact.
    expect((await listUsers({ "x-api-key": alphaKey.key })).status).toBe(200);
    expect((await listUsers(bearer(alphaMember.auth.auth_token))).status).toBe(200);
  });
});
