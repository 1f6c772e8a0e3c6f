/** A small seeded PRNG (mulberry32), so a failing generated input can be reproduced from its seed. */
export function createRandom(seed: number) {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => items[int(0, items.length - 1)]!;
  return { next, int, pick, chance: (p: number) => next() < p };
}

export type Random = ReturnType<typeof createRandom>;

/** The seed of this run: FAULTS_SEED when set, otherwise a fixed one. */
export function faultSeed(offset = 0): number {
  return (Number(process.env.FAULTS_SEED) || 20261122) + offset;
}
