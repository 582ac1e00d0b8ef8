export * from './credential-auth.js';
export * from './oauth-token-state.js';
export * from './oauth.config.js';
export * from './pkce.js';
export * from './token-endpoint.js';
export * from './token-http.js';
