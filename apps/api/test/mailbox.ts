import type { AddressInfo } from "node:net";
import { eventually } from "@platform/core/testing";
import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  from: string;
  to: string[];
  /** The message as sent, headers and body (RFC 5322). */
  raw: string;
  /** The body, quoted-printable decoded. */
  text: string;
}

export interface Mailbox {
  /** `SMTP_URL` for the API. */
  smtpUrl: string;
  messages: ReceivedMail[];
  /** The first mail to `to` whose text matches, once it has arrived. */
  waitFor(to: string, pattern?: RegExp): Promise<ReceivedMail>;
  stop(): Promise<void>;
}

/** Undoes quoted-printable soft line breaks and escapes, so that links read whole. */
function decodeQuotedPrintable(body: string): string {
  return Buffer.from(
    body
      .replace(/=\r?\n/g, "")
      .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
    "latin1",
  ).toString("utf8");
}

/** A real SMTP server on a loopback port that keeps what it receives. */
export async function startMailbox(): Promise<Mailbox> {
  const messages: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        const body = raw.slice(raw.indexOf("\r\n\r\n") + 4);
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((recipient) => recipient.address),
          raw,
          text: decodeQuotedPrintable(body),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    smtpUrl: `smtp://127.0.0.1:${port}`,
    messages,
    async waitFor(to, pattern) {
      let found: ReceivedMail | undefined;
      await eventually(() => {
        found = messages.find((mail) => mail.to.includes(to) && (!pattern || pattern.test(mail.text)));
        return found !== undefined;
      }, 15_000);
      if (!found) throw new Error(`no mail to ${to}`);
      return found;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
