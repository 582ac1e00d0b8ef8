import { readFileSync } from 'node:fs';
import { AppError } from '@ingest/platform';
import { type TProperties, Type } from '@sinclair/typebox';

/**
 * The OAuth apps of the deployment (docs/configuration.md, "CRM OAuth"): one HubSpot public app
 * and one Salesforce connected app, registered by the operator. The console needs them for the
 * authorization-code flow (authorize, code exchange, the redirect URI); crm-sink needs the client
 * id and secret too, to refresh. Both read this one fragment, so the names cannot drift. An app
 * whose client id is empty is off: the dashboard offers no "Connect" for it.
 */
export const CrmOAuthConfig = {
  /** Where the CRM sends the owner back: https://<dashboard host>/dashboard/api/crm/oauth/callback, registered in both apps. */
  CRM_OAUTH_REDIRECT_URL: Type.String({ default: '' }),
  CRM_OAUTH_HUBSPOT_CLIENT_ID: Type.String({ default: '' }),
  CRM_OAUTH_HUBSPOT_CLIENT_SECRET: Type.String({ default: '' }),
  /** The secret as a file (a mounted Secret), instead of the variable. */
  CRM_OAUTH_HUBSPOT_CLIENT_SECRET_FILE: Type.String({ default: '' }),
  CRM_OAUTH_HUBSPOT_SCOPES: Type.String({
    default: 'oauth crm.objects.contacts.read crm.objects.contacts.write crm.objects.companies.read crm.objects.companies.write',
  }),
  CRM_OAUTH_HUBSPOT_AUTHORIZE_URL: Type.String({ default: 'https://app.hubspot.com/oauth/authorize' }),
  /** HubSpot's API: its token and refresh-token endpoints (/oauth/v1/...) and the credential's baseUrl. */
  CRM_OAUTH_HUBSPOT_API_URL: Type.String({ default: 'https://api.hubapi.com' }),
  CRM_OAUTH_SALESFORCE_CLIENT_ID: Type.String({ default: '' }),
  CRM_OAUTH_SALESFORCE_CLIENT_SECRET: Type.String({ default: '' }),
  CRM_OAUTH_SALESFORCE_CLIENT_SECRET_FILE: Type.String({ default: '' }),
  CRM_OAUTH_SALESFORCE_SCOPES: Type.String({ default: 'api refresh_token' }),
  /** https://login.salesforce.com, https://test.salesforce.com (sandboxes) or a My Domain login URL. */
  CRM_OAUTH_SALESFORCE_LOGIN_URL: Type.String({ default: 'https://login.salesforce.com' }),
  /**
   * Salesforce's token answers carry no lifetime (the org's session timeout decides, 2 h by
   * default): the sink takes an access token as good for this long, and refreshes on a 401 too.
   */
  CRM_OAUTH_SALESFORCE_TOKEN_TTL_SECONDS: Type.Integer({ minimum: 60, default: 7200 }),
  /** An access token is refreshed this long before it expires. */
  CRM_OAUTH_REFRESH_BEFORE_SECONDS: Type.Integer({ minimum: 0, default: 300 }),
  /** Each call to a token, revoke or authorize endpoint ends within this. */
  CRM_OAUTH_HTTP_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 15_000 }),
} satisfies TProperties;

export type CrmOAuthSettings = { [K in keyof typeof CrmOAuthConfig]: (typeof CrmOAuthConfig)[K]['static'] };

export const OAUTH_PROVIDERS = ['hubspot', 'salesforce'] as const;
export type OAuthProvider = (typeof OAUTH_PROVIDERS)[number];

/** One registered OAuth app and its endpoints. */
export interface OAuthApp {
  provider: OAuthProvider;
  clientId: string;
  clientSecret: string;
  scopes: string;
  authorizeUrl: string;
  tokenUrl: string;
  /** Access tokens without `expires_in` in their answer live this long (Salesforce). */
  defaultTokenTtlMs: number;
}

export interface OAuthApps {
  redirectUrl: string;
  apps: Partial<Record<OAuthProvider, OAuthApp>>;
  refreshBeforeMs: number;
  httpTimeoutMs: number;
  hubspotApiUrl: string;
  salesforceLoginUrl: string;
}

function secretOf(variable: string, inline: string, file: string): string {
  if (file === '') return inline.trim();
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new AppError('invalid_config', `${variable}_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

const trimSlash = (url: string) => url.replace(/\/+$/, '');

export function oauthAppsFromConfig(config: CrmOAuthSettings): OAuthApps {
  const apps: OAuthApps['apps'] = {};
  const hubspotApi = trimSlash(config.CRM_OAUTH_HUBSPOT_API_URL);
  const salesforceLogin = trimSlash(config.CRM_OAUTH_SALESFORCE_LOGIN_URL);
  if (config.CRM_OAUTH_HUBSPOT_CLIENT_ID !== '') {
    const clientSecret = secretOf('CRM_OAUTH_HUBSPOT_CLIENT_SECRET', config.CRM_OAUTH_HUBSPOT_CLIENT_SECRET, config.CRM_OAUTH_HUBSPOT_CLIENT_SECRET_FILE);
    if (clientSecret === '') throw new AppError('invalid_config', 'CRM_OAUTH_HUBSPOT_CLIENT_SECRET (or _FILE) is required with CRM_OAUTH_HUBSPOT_CLIENT_ID');
    apps.hubspot = {
      provider: 'hubspot',
      clientId: config.CRM_OAUTH_HUBSPOT_CLIENT_ID,
      clientSecret,
      scopes: config.CRM_OAUTH_HUBSPOT_SCOPES,
      authorizeUrl: config.CRM_OAUTH_HUBSPOT_AUTHORIZE_URL,
      tokenUrl: `${hubspotApi}/oauth/v1/token`,
      // HubSpot always sends expires_in (30 minutes); this is only a fallback.
      defaultTokenTtlMs: 30 * 60_000,
    };
  }
  if (config.CRM_OAUTH_SALESFORCE_CLIENT_ID !== '') {
    const clientSecret = secretOf(
      'CRM_OAUTH_SALESFORCE_CLIENT_SECRET',
      config.CRM_OAUTH_SALESFORCE_CLIENT_SECRET,
      config.CRM_OAUTH_SALESFORCE_CLIENT_SECRET_FILE,
    );
    if (clientSecret === '')
      throw new AppError('invalid_config', 'CRM_OAUTH_SALESFORCE_CLIENT_SECRET (or _FILE) is required with CRM_OAUTH_SALESFORCE_CLIENT_ID');
    apps.salesforce = {
      provider: 'salesforce',
      clientId: config.CRM_OAUTH_SALESFORCE_CLIENT_ID,
      clientSecret,
      scopes: config.CRM_OAUTH_SALESFORCE_SCOPES,
      authorizeUrl: `${salesforceLogin}/services/oauth2/authorize`,
      tokenUrl: `${salesforceLogin}/services/oauth2/token`,
      defaultTokenTtlMs: config.CRM_OAUTH_SALESFORCE_TOKEN_TTL_SECONDS * 1000,
    };
  }
  if (Object.keys(apps).length > 0 && config.CRM_OAUTH_REDIRECT_URL !== '' && !/^https?:\/\/[^\s]+$/.test(config.CRM_OAUTH_REDIRECT_URL)) {
    throw new AppError('invalid_config', 'CRM_OAUTH_REDIRECT_URL must be an absolute http(s) URL');
  }
  return {
    redirectUrl: config.CRM_OAUTH_REDIRECT_URL,
    apps,
    refreshBeforeMs: config.CRM_OAUTH_REFRESH_BEFORE_SECONDS * 1000,
    httpTimeoutMs: config.CRM_OAUTH_HTTP_TIMEOUT_MS,
    hubspotApiUrl: hubspotApi,
    salesforceLoginUrl: salesforceLogin,
  };
}
