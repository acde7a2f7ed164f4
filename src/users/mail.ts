// Reset mails. Every mail is written to the outbox table in the same transaction as its token;
// with SMTP_URL it is then sent over SMTP and marked sent. Without SMTP the operator reads the
// outbox with `quartet users outbox`.
import nodemailer, { type Transporter } from 'nodemailer';
import type { FastifyBaseLogger } from 'fastify';
import type { UsersConfig } from './config.js';
import type { UsersStore } from './store.js';

export interface Mail {
  recipient: string;
  subject: string;
  body: string;
}

export class Mailer {
  private transport?: Transporter;

  constructor(
    private readonly config: UsersConfig,
    private readonly store: UsersStore,
    private readonly log: FastifyBaseLogger,
  ) {}

  get smtp(): boolean {
    return Boolean(this.config.smtpUrl);
  }

  /** Sends an outbox mail when SMTP is configured; failures stay in the outbox with the error. */
  async deliver(outboxId: number, mail: Mail): Promise<void> {
    if (!this.config.smtpUrl) return;
    this.transport ??= nodemailer.createTransport(this.config.smtpUrl);
    try {
      await this.transport.sendMail({
        from: this.config.mailFrom,
        to: mail.recipient,
        subject: mail.subject,
        text: mail.body,
      });
      await this.store.markMail(outboxId, { sentAt: Date.now() });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.log.error({ outboxId, err: message }, 'sending a reset mail failed; it stays in the outbox');
      await this.store.markMail(outboxId, { error: message });
    }
  }

  close(): void {
    this.transport?.close();
  }
}

export function resetMail(config: UsersConfig, email: string, token: string): Mail {
  const minutes = Math.round(config.resetTtlMs / 60_000);
  return {
    recipient: email,
    subject: 'Your password reset code',
    body: [
      'Someone (hopefully you) asked to reset the password of this account.',
      '',
      `Reset code: ${token}`,
      '',
      `It works once, within ${minutes} minutes. To choose a new password:`,
      '',
      `  curl -X PUT ${config.publicUrl}/api/users/forgotpassword \\`,
      `    -H 'Content-Type: application/json' \\`,
      `    -d '{"email": "${email.replace(/['"\\]/g, '')}", "password": "<new password>", "token": "${token}"}'`,
      '',
      'If you did not ask for this, ignore this mail; your password stays as it is.',
    ].join('\n'),
  };
}
