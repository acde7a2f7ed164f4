// The mint's books: its keysets, which proofs are spent or pending (by Y, NUT-07) and which
// blinded messages it has signed. Checks never change state; the caller commits afterwards in
// the same synchronous step, so an operation applies completely or not at all.
import {
  inputFee,
  proofY,
  type BlindedMessage,
  type BlindSignature,
  type ProofState,
  type ProofStateEntry,
  type RestoreResponse,
  type Unit,
  type WireProof,
} from '../cashu/index.js';
import { Codes, MintError } from './errors.js';
import { createKeyset, parsePoint, signBlinded, verifyProof, type Keyset } from './keys.js';

export const MAX_INPUTS = 1000;
export const MAX_OUTPUTS = 1000;
const MAX_SECRET_LENGTH = 1024;

export interface CheckedInputs {
  ys: string[];
  total: number;
  /** NUT-02 input fee: ceil(sum of input_fee_ppk / 1000). */
  fee: number;
  unit: Unit;
}

export interface LedgerSnapshot {
  keysets: { unit: Unit; inputFeePpk: number; generation: number; active: boolean }[];
  spent: string[];
  signed: SignedOutput[];
}

/** An output as it was signed (blank outputs carry the amount the mint gave them) and its signature. */
export interface SignedOutput {
  output: BlindedMessage;
  signature: BlindSignature;
}

export class Ledger {
  readonly keysets = new Map<string, Keyset>();
  private readonly generations = new Map<string, number>();
  private readonly spent = new Set<string>();
  private readonly pending = new Set<string>();
  /** Every signature ever given, by B_: outputs are never signed twice, and NUT-09 restores them. */
  private readonly signed = new Map<string, SignedOutput>();
  private readonly pendingOutputs = new Set<string>();

  constructor(
    readonly unit: Unit,
    inputFeePpk: number,
    private readonly seed?: string,
  ) {
    this.addKeyset(inputFeePpk, 0);
  }

  private addKeyset(inputFeePpk: number, generation: number): Keyset {
    const keyset = createKeyset({ unit: this.unit, inputFeePpk, seed: this.seed, generation });
    this.keysets.set(keyset.id, keyset);
    this.generations.set(keyset.id, generation);
    return keyset;
  }

  activeKeyset(): Keyset {
    const active = [...this.keysets.values()].filter((keyset) => keyset.active);
    return active[active.length - 1];
  }

  /** Key rotation (NUT-02): a new active keyset; the old ones still redeem but no longer sign. */
  rotateKeyset(inputFeePpk = this.activeKeyset().inputFeePpk): Keyset {
    for (const keyset of this.keysets.values()) keyset.active = false;
    return this.addKeyset(inputFeePpk, this.keysets.size);
  }

  keyset(id: string): Keyset {
    const keyset = this.keysets.get(id);
    if (!keyset) throw new MintError(Codes.keysetUnknown, `keyset ${id} is not known`);
    return keyset;
  }

  /** Verifies inputs (NUT-03): known keysets, valid signatures, no duplicates, none spent or pending. */
  checkInputs(inputs: WireProof[]): CheckedInputs {
    if (inputs.length === 0) throw new MintError(Codes.generic, 'no inputs provided');
    if (inputs.length > MAX_INPUTS) throw new MintError(Codes.maxInputsExceeded, `at most ${MAX_INPUTS} inputs`);
    for (const proof of inputs) checkSecret(proof.secret);
    const ys = inputs.map((proof) => proofY(proof.secret));
    if (new Set(ys).size !== ys.length) throw new MintError(Codes.duplicateInputs, 'duplicate inputs provided');
    const units = new Set<Unit>();
    let total = 0;
    for (const proof of inputs) {
      const keyset = this.keyset(proof.id);
      if (!verifyProof(keyset, proof)) throw new MintError(Codes.proofVerificationFailed, 'proof verification failed');
      units.add(keyset.unit);
      total += proof.amount;
    }
    if (units.size > 1) throw new MintError(Codes.multipleUnits, 'inputs of multiple units');
    if (ys.some((y) => this.spent.has(y))) throw new MintError(Codes.proofsAlreadySpent, 'proofs already spent');
    if (ys.some((y) => this.pending.has(y))) throw new MintError(Codes.proofsPending, 'proofs are pending');
    const fee = inputFee(
      inputs.map((proof) => proof.id),
      [...this.keysets.values()],
    );
    return { ys, total, fee, unit: [...units][0] };
  }

  /**
   * Verifies outputs: unique, of an active keyset, valid points, never signed and not pending.
   * Blank outputs (NUT-08 change) get their amounts from the mint, so theirs are not checked.
   */
  checkOutputs(outputs: BlindedMessage[], { blank = false } = {}): { total: number; unit?: Unit } {
    if (outputs.length > MAX_OUTPUTS) throw new MintError(Codes.maxOutputsExceeded, `at most ${MAX_OUTPUTS} outputs`);
    const blinded = outputs.map((output) => output.B_.toLowerCase());
    if (new Set(blinded).size !== blinded.length) {
      throw new MintError(Codes.duplicateOutputs, 'duplicate outputs provided');
    }
    const units = new Set<Unit>();
    let total = 0;
    for (const output of outputs) {
      const keyset = this.keyset(output.id);
      if (!keyset.active) {
        throw new MintError(Codes.keysetInactive, `keyset ${output.id} is inactive, cannot sign messages`);
      }
      if (!blank && !keyset.privateKeys.has(output.amount)) {
        throw new MintError(Codes.generic, `invalid output amount ${output.amount}: not a power of two of the keyset`);
      }
      if (!parsePoint(output.B_)) {
        throw new MintError(Codes.generic, 'invalid blinded message: B_ is not a compressed secp256k1 point');
      }
      units.add(keyset.unit);
      total += output.amount;
    }
    if (units.size > 1) throw new MintError(Codes.multipleUnits, 'outputs of multiple units');
    if (blinded.some((b) => this.signed.has(b))) {
      throw new MintError(Codes.outputsAlreadySigned, 'outputs have already been signed before');
    }
    if (blinded.some((b) => this.pendingOutputs.has(b))) {
      throw new MintError(Codes.outputsPending, 'outputs are pending');
    }
    return { total, unit: [...units][0] };
  }

  /** Signs checked outputs and remembers them so they are never signed twice. */
  sign(outputs: BlindedMessage[]): BlindSignature[] {
    return outputs.map((output) => {
      const signature = signBlinded(this.keyset(output.id), output.amount, output.B_);
      this.signed.set(output.B_.toLowerCase(), {
        output: { amount: output.amount, id: output.id, B_: output.B_ },
        signature,
      });
      return signature;
    });
  }

  /** NUT-09: the signatures given earlier to those of these outputs that were signed. */
  restore(outputs: BlindedMessage[]): RestoreResponse {
    if (outputs.length > MAX_OUTPUTS) throw new MintError(Codes.maxOutputsExceeded, `at most ${MAX_OUTPUTS} outputs`);
    const found = outputs
      .map((output) => this.signed.get(output.B_.toLowerCase()))
      .filter((entry) => entry !== undefined);
    return { outputs: found.map((entry) => entry.output), signatures: found.map((entry) => entry.signature) };
  }

  spend(ys: string[]) {
    for (const y of ys) {
      this.pending.delete(y);
      this.spent.add(y);
    }
  }

  /** Marks inputs and blank outputs as in flight (a melt waiting for its payment). */
  reserve(ys: string[], outputs: BlindedMessage[]) {
    for (const y of ys) this.pending.add(y);
    for (const output of outputs) this.pendingOutputs.add(output.B_.toLowerCase());
  }

  release(ys: string[], outputs: BlindedMessage[]) {
    for (const y of ys) this.pending.delete(y);
    for (const output of outputs) this.pendingOutputs.delete(output.B_.toLowerCase());
  }

  /** NUT-07 states, in the order asked. */
  states(ys: string[]): ProofStateEntry[] {
    return ys.map((Y) => {
      const y = Y.toLowerCase();
      const state: ProofState = this.spent.has(y) ? 'SPENT' : this.pending.has(y) ? 'PENDING' : 'UNSPENT';
      return { Y, state, witness: null };
    });
  }

  snapshot(): LedgerSnapshot {
    return {
      keysets: [...this.keysets.values()].map((k) => ({
        unit: k.unit,
        inputFeePpk: k.inputFeePpk,
        generation: this.generations.get(k.id)!,
        active: k.active,
      })),
      spent: [...this.spent],
      signed: [...this.signed.values()],
    };
  }

  /** Restores a snapshot taken with the same seed (keys are re-derived, not stored). */
  load(snapshot: LedgerSnapshot) {
    this.keysets.clear();
    this.generations.clear();
    for (const saved of snapshot.keysets) this.addKeyset(saved.inputFeePpk, saved.generation).active = saved.active;
    for (const y of snapshot.spent) this.spent.add(y);
    for (const entry of snapshot.signed) this.signed.set(entry.output.B_.toLowerCase(), entry);
  }
}

function checkSecret(secret: string) {
  if (secret.length === 0 || secret.length > MAX_SECRET_LENGTH) {
    throw new MintError(Codes.proofVerificationFailed, `secret must be 1 to ${MAX_SECRET_LENGTH} characters`);
  }
  // A NUT-10 secret carries spending conditions (P2PK, HTLC…) this mint does not enforce:
  // refusing it is safer than accepting it as if it were unlocked.
  if (secret.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(secret);
    } catch {
      return;
    }
    if (Array.isArray(parsed) && typeof parsed[0] === 'string') {
      throw new MintError(
        Codes.proofVerificationFailed,
        `spending condition ${parsed[0]} (NUT-10) is not supported by this dev mint`,
      );
    }
  }
}
