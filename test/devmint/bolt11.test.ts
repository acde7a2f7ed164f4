// Reading BOLT-11 invoices (src/cashu/bolt11.ts): the amount and the payment hash, from the
// BOLT-11 document's own examples and from the dev mint's fake invoices.
import { describe, expect, it } from 'vitest';
import { invoiceAmountMsat, invoicePaymentHash } from '../../src/cashu/index.js';
import { FakeLightning } from '../../src/devmint/lightning.js';

// From github.com/lightning/bolts 11-payment-encoding.md, "Examples".
const DONATION =
  'lnbc1pvjluezsp5zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zygspp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcy' +
  'q5rqwzqfqypqdpl2pkx2ctnv5sxxmmwwd5kgetjypeh2ursdae8g6twvus8g6rfwvs8qun0dfjkxaq9qrsgq357wnc5r2ueh7ck6q93dj32dlqnl' +
  's087fxdwk8qakdyafkq3yap9us6v52vjjsrvywa6rt52cm9r9zqt8r2t7mlcwspyetp5h2tztugp9lfyql';
const COFFEE =
  'lnbc2500u1pvjluezsp5zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zygspp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsy' +
  'qcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpu9qrsgquk0rl77nj30yxdy8j9vdx85fkpmdla2087ne0xh8nhedh8w27kyke0lp53ut35' +
  '3s06fv3qfegext0eh0ymjpf39tuven09sam30g4vgpfna3rh';
const HASH = '0001020304050607080900010203040506070809000102030405060708090102';

describe('bolt11 reading', () => {
  it('reads the amount and payment hash of BOLT-11 examples', () => {
    expect(invoiceAmountMsat(COFFEE)).toBe(250_000_000);
    expect(invoicePaymentHash(COFFEE)).toBe(HASH);
    expect(invoiceAmountMsat(DONATION)).toBeNull();
    expect(invoicePaymentHash(DONATION)).toBe(HASH);
    expect(invoicePaymentHash(COFFEE.toUpperCase())).toBe(HASH);
  });

  it('reads the fake invoices of the dev mint', () => {
    const lightning = new FakeLightning();
    for (const msat of [1000, 21_000, 1_500_000, 123]) {
      const invoice = lightning.createInvoice(msat);
      expect(invoiceAmountMsat(invoice.request)).toBe(msat);
      expect(invoicePaymentHash(invoice.request)).toBe(invoice.paymentHash);
    }
  });

  it('reads nothing from what is not an invoice', () => {
    for (const text of ['', 'hello', 'lnbc1', 'lnbc10u1bad!chars', 'x'.repeat(10_000)]) {
      expect(invoiceAmountMsat(text)).toBeUndefined();
      expect(invoicePaymentHash(text)).toBeNull();
    }
    expect(invoiceAmountMsat('lnbc015u1qqqq')).toBeUndefined(); // a leading zero
    expect(invoicePaymentHash('lnbc1' + 'q'.repeat(120))).toBeNull(); // fields with no `p`
  });
});
