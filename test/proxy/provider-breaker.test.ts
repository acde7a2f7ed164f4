// The circuit breaker of one provider (provider-breaker.ts), on a clock of the test's own.
import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/proxy/forward/provider-breaker.js';

describe('circuit breaker', () => {
  const make = () => {
    const clock = { now: 1_000 };
    return { clock, breaker: new CircuitBreaker(3, 30_000, () => clock.now) };
  };

  it('opens after the set number of failures in a row, and a success in between starts the count again', () => {
    const { breaker } = make();
    breaker.failed();
    breaker.failed();
    breaker.succeeded();
    breaker.failed();
    breaker.failed();
    expect(breaker.state).toBe('closed');
    breaker.failed();
    expect(breaker.state).toBe('open');
    expect(breaker.retryAt).toBe(31_000);
  });

  it('lets one probe through after the cool-down; its success closes the breaker', () => {
    const { clock, breaker } = make();
    for (let i = 0; i < 3; i++) breaker.failed();
    clock.now += 29_999;
    expect(breaker.state).toBe('open');
    expect(breaker.attempt()).toEqual({ probe: false });
    clock.now += 1;
    expect(breaker.state).toBe('half-open');
    expect(breaker.attempt()).toEqual({ probe: true });
    // While the probe is under way, nobody else passes.
    expect(breaker.state).toBe('open');
    breaker.succeeded();
    expect(breaker.state).toBe('closed');
    expect(breaker.retryAt).toBe(0);
  });

  it('opens again for a whole cool-down when the probe fails', () => {
    const { clock, breaker } = make();
    for (let i = 0; i < 3; i++) breaker.failed();
    clock.now += 30_000;
    expect(breaker.attempt().probe).toBe(true);
    clock.now += 500;
    breaker.failed();
    expect(breaker.state).toBe('open');
    expect(breaker.retryAt).toBe(clock.now + 30_000);
  });

  it('gives a probe’s place back when its caller left without an answer', () => {
    const { clock, breaker } = make();
    for (let i = 0; i < 3; i++) breaker.failed();
    clock.now += 30_000;
    const { probe } = breaker.attempt();
    breaker.abandoned(probe);
    expect(breaker.state).toBe('half-open');
  });
});
