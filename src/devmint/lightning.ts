// A fake Lightning node. Invoices are bolt11-looking strings (`lnbcrt<amount>1…`, amount in the
// human-readable part as BOLT-11 encodes it) that no real node can pay; they settle when told
// to. Outgoing payments succeed instantly unless the next ones were scripted to fail or hang.
// The fake nodes of one process form a network: paying an invoice of another dev mint in the
// same process settles it there (its mint quote turns PAID), so two dev mints pay each other.
import { createHash, randomBytes } from 'node:crypto';
import { BOLT11_MULTIPLIERS as MULTIPLIERS } from '../cashu/bolt11.js';

export { invoiceAmountMsat } from '../cashu/bolt11.js';

const BECH32 = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';

export interface Invoice {
  request: string;
  amountMsat: number;
  paymentHash: string;
  preimage: string;
  paid: boolean;
}

export type PaymentOutcome = { paid: true; preimage: string; feeMsat: number } | { paid: false; detail: string };

export interface HeldPayment {
  /** Resolves the held payment: succeed (default) or fail. */
  settle(outcome?: 'paid' | 'failed'): void;
}

type Script = { kind: 'fail'; detail: string } | { kind: 'hold'; release: Promise<'paid' | 'failed'> };

/** Every open fake node's invoices in this process, by request: the in-process "Lightning network". */
const network = new Map<string, FakeLightning>();

export class FakeLightning {
  private readonly invoices = new Map<string, Invoice>();
  private readonly scripts: Script[] = [];
  private readonly held = new Set<(outcome: 'paid' | 'failed') => void>();

  /** A new invoice of this node (to be paid to it). */
  createInvoice(amountMsat: number): Invoice {
    const preimage = randomBytes(32).toString('hex');
    const paymentHash = createHash('sha256').update(Buffer.from(preimage, 'hex')).digest('hex');
    const timestamp = toBech32(
      Buffer.from(
        Math.floor(Date.now() / 1000)
          .toString(16)
          .padStart(10, '0'),
        'hex',
      ),
    ).slice(0, 7);
    const hashField = `pp5${toBech32(Buffer.from(paymentHash, 'hex'))}`;
    const request = `lnbcrt${hrpAmount(amountMsat)}1${timestamp}${hashField}${toBech32(randomBytes(68))}`;
    const invoice = { request, amountMsat, paymentHash, preimage, paid: false };
    this.invoices.set(request, invoice);
    network.set(request, this);
    return invoice;
  }

  invoice(request: string): Invoice | undefined {
    return this.invoices.get(request);
  }

  /** Marks an invoice of this node paid (someone paid it). */
  settle(request: string) {
    const invoice = this.invoices.get(request);
    if (!invoice) throw new Error('unknown invoice');
    invoice.paid = true;
  }

  /** The next outgoing payment fails with `detail`. */
  failNextPayment(detail = 'payment failed (dev mint: failNextMelt)') {
    this.scripts.push({ kind: 'fail', detail });
  }

  /** The next outgoing payment stays in flight until `settle()` is called. */
  holdNextPayment(): HeldPayment {
    let finish!: (outcome: 'paid' | 'failed') => void;
    const release = new Promise<'paid' | 'failed'>((resolve) => {
      finish = resolve;
    });
    this.held.add(finish);
    this.scripts.push({ kind: 'hold', release });
    return {
      settle: (outcome = 'paid') => {
        this.held.delete(finish);
        finish(outcome);
      },
    };
  }

  /** Pays an invoice of another node: fake, so only the scripts decide the outcome. */
  async pay(request: string): Promise<PaymentOutcome> {
    const script = this.scripts.shift();
    if (script?.kind === 'fail') return { paid: false, detail: script.detail };
    if (script?.kind === 'hold' && (await script.release) === 'failed') {
      return { paid: false, detail: 'payment failed (dev mint: held payment settled as failed)' };
    }
    // An invoice of another dev mint of this process: paid there, once.
    const payee = network.get(request);
    if (payee && payee !== this) {
      const invoice = payee.invoice(request)!;
      if (invoice.paid) return { paid: false, detail: 'invoice already paid' };
      invoice.paid = true;
      return { paid: true, preimage: invoice.preimage, feeMsat: 0 };
    }
    // Our own invoices carry their preimage; for foreign ones any 32 bytes will do.
    return {
      paid: true,
      preimage: this.invoices.get(request)?.preimage ?? randomBytes(32).toString('hex'),
      feeMsat: 0,
    };
  }

  snapshot(): Invoice[] {
    return [...this.invoices.values()];
  }

  load(invoices: Invoice[]) {
    for (const invoice of invoices) {
      this.invoices.set(invoice.request, invoice);
      network.set(invoice.request, this);
    }
  }

  /** Fails every held payment, so that closing the mint does not wait for them. */
  close() {
    for (const resolve of this.held) resolve('failed');
    this.held.clear();
    for (const request of this.invoices.keys()) if (network.get(request) === this) network.delete(request);
  }
}

function hrpAmount(amountMsat: number): string {
  for (const [multiplier, msat] of MULTIPLIERS) if (amountMsat % msat === 0) return `${amountMsat / msat}${multiplier}`;
  return `${amountMsat * 10}p`;
}

function toBech32(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = ((value << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += BECH32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BECH32[(value << (5 - bits)) & 31];
  return out;
}
