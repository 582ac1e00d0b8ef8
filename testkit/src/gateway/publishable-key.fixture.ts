/**
 * A browser test's publishable key, made as an operator makes it: through the console's admin
 * API (the gateway fixture's admin app), the account's allowed origins set first, then a key of
 * type `publishable`.
 */
import { ADMIN_TOKEN, type GatewayFixture, randomClientIp } from './gateway.fixture.js';

export async function publishableKeyFor(gw: GatewayFixture, accountId: string, origins: string[]): Promise<string> {
  const admin = async (method: 'POST' | 'PUT', url: string, payload: object) => {
    const response = await gw.admin.inject({
      method,
      url: `/admin/v1${url}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      payload,
      remoteAddress: randomClientIp(),
    });
    if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
    return response.json<{ apiKey: string }>();
  };
  await admin('PUT', `/accounts/${accountId}/allowed-origins`, { origins });
  return (await admin('POST', `/accounts/${accountId}/keys`, { name: 'web', type: 'publishable' })).apiKey;
}
