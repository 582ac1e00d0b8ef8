/**
 * Rate limits of dashboard routes. The public API's 120/min/IP would make a busy dashboard tab
 * (polling jobs, loading assets) collide with the owner's own API calls from the same office,
 * so dashboard routes get their own budget; sign-in gets a strict one against password guessing.
 */
export interface RouteLimits {
  api: { config: { rateLimit: { max: number; timeWindow: number } } };
  signIn: { config: { rateLimit: { max: number; timeWindow: number } } };
}

export function routeLimits(perMinute: number, signInPerMinute: number): RouteLimits {
  return {
    api: { config: { rateLimit: { max: perMinute, timeWindow: 60_000 } } },
    signIn: { config: { rateLimit: { max: signInPerMinute, timeWindow: 60_000 } } },
  };
}
