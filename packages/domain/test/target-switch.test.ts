import { AUTO_DISABLED_REASON, targetSwitchState } from '../src';

const now = new Date('2026-11-24T12:00:00Z');
const earlier = new Date('2026-11-20T08:00:00Z');
const on = { enabled: true, disabledReason: null, disabledAt: null, failingSince: earlier };
const autoOff = { enabled: false, disabledReason: AUTO_DISABLED_REASON, disabledAt: earlier, failingSince: earlier };

describe('targetSwitchState', () => {
  it('creates a target on with no switch-off, or off from now with no reason', () => {
    expect(targetSwitchState(null, true, now)).toEqual({ disabledReason: null, disabledAt: null, failingSince: null });
    expect(targetSwitchState(null, false, now)).toEqual({ disabledReason: null, disabledAt: now, failingSince: null });
  });

  it('keeps the run of failures of a target that stays on', () => {
    expect(targetSwitchState(on, true, now)).toEqual({ disabledReason: null, disabledAt: null, failingSince: earlier });
  });

  it('clears the reason, the time and the run of failures of a target switched on again', () => {
    expect(targetSwitchState(autoOff, true, now)).toEqual({ disabledReason: null, disabledAt: null, failingSince: null });
  });

  it('switches off by hand from now, with no reason, keeping the run of failures', () => {
    expect(targetSwitchState(on, false, now)).toEqual({ disabledReason: null, disabledAt: now, failingSince: earlier });
  });

  it('keeps the reason and time of an earlier switch-off when it is kept off', () => {
    expect(targetSwitchState(autoOff, false, now)).toEqual({ disabledReason: AUTO_DISABLED_REASON, disabledAt: earlier, failingSince: earlier });
  });
});
