// The siphash24 package (mafintosh/siphash24, MIT) ships no types; this is the part seen-ids.ts calls.
declare module 'siphash24' {
  /** SipHash-2-4 of `data` under a 16-byte key into `out` (8 bytes); `noAssert` skips the size checks. */
  function siphash24(data: Uint8Array, key: Uint8Array, out?: Uint8Array, noAssert?: boolean): Uint8Array;
  export default siphash24;
}
