// NUT-12: the DLEQ proof that a blind signature was made with the mint's published key.
// https://github.com/cashubtc/nuts/blob/main/12.md
export type { SerializedDLEQ as Dleq } from '@cashu/cashu-ts';
