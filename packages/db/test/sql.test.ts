import { byShape, db } from '../src/sql';

describe('byShape', () => {
  const statement = byShape((shape: { merchant: boolean }, v: { tenantId: string; limit: number }) =>
    db
      .selectFrom('events')
      .select('id')
      .where(shape.merchant ? 'merchant_id' : 'program_id', '=', v.tenantId)
      .limit(v.limit),
  );

  it('builds the text once per shape and fills each call’s own values in order', () => {
    const first = statement({ merchant: true }, { tenantId: 'm1', limit: 5 }).compile();
    const second = statement({ merchant: true }, { tenantId: 'm2', limit: 7 }).compile();
    expect(second.sql).toBe(first.sql);
    expect(first.parameters).toEqual(['m1', 5]);
    expect(second.parameters).toEqual(['m2', 7]);
    expect(statement({ merchant: false }, { tenantId: 'p1', limit: 1 }).compile().sql).toContain('"program_id" = $1');
  });

  it('refuses a statement with a parameter that is not one of its values', () => {
    const constant = byShape((_shape: Record<string, never>, v: { id: string }) =>
      db.selectFrom('events').select('id').where('id', '=', v.id).where('origin', '=', 'api'),
    );
    expect(() => constant({}, { id: 'e1' }).compile()).toThrow(/not one of its values/);
  });
});
