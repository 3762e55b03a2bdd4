import { createTransport } from "nodemailer";
import type { Logger } from "../logger.ts";

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends the accounts' mails (invitations, password resets) through the configured SMTP server. */
export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

/** A mailer for `SMTP_URL`, or undefined when none is configured (links are then handed out otherwise). */
export function createMailer(config: { smtpUrl?: string; from: string }, logger: Logger): Mailer | undefined {
  if (!config.smtpUrl) return undefined;
  const transport = createTransport(config.smtpUrl, { from: config.from });
  return {
    async send(mail) {
      const started = performance.now();
      await transport.sendMail(mail);
      logger.debug({ subject: mail.subject, ms: Math.round(performance.now() - started) }, "mail sent");
    },
    close: () => transport.close(),
  };
}
