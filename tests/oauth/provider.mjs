// A real OpenID provider (oidc-provider, certified) on loopback for foldgate's OAuth tests.
//
// Started by tests/oauth_provider.py (a pytest fixture) as:
//   node provider.mjs   with  PORT, KEYS_FILE, SCOPES, MACHINE_SECRET  in the environment
// and prints one line "ready <issuer>" once it listens.
//
// - client credentials for a machine agent (client "machine-agent", secret MACHINE_SECRET);
// - authorization code + PKCE for user agents, registered dynamically (RFC 7591) by the MCP SDK;
//   login and consent are oidc-provider's dev interactions, which the tests drive over HTTP;
// - resource indicators (RFC 8707): every access token is a JWT whose `aud` is the resource the
//   client asked for, carrying only the scopes SCOPES lists, and lives 5 minutes;
// - refresh tokens (upstream OAuth tests): issued to clients registered for the refresh_token grant,
//   rotated on every use (the old one stops working), revocable (RFC 7009); ACCESS_TTL (seconds,
//   default 300) shortens access tokens so a test sees them expire;
// - signing keys come from KEYS_FILE (a private JWKS the fixture generated), so tests can also forge
//   tokens with the provider's own key (expired, wrong audience, ...) and check foldgate refuses them.
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const keys = JSON.parse(readFileSync(process.env.KEYS_FILE, 'utf8'));
const scopes = (process.env.SCOPES || 'foldgate:read foldgate:write foldgate:destructive').split(' ');
const accessTTL = Number(process.env.ACCESS_TTL || 300);

const configuration = {
  jwks: keys,
  clients: [
    {
      client_id: 'machine-agent',
      client_secret: process.env.MACHINE_SECRET,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    },
  ],
  scopes: ['openid', 'offline_access', ...scopes],
  features: {
    clientCredentials: { enabled: true },
    // Open registration is fine on loopback: the MCP SDK registers its user-agent client itself.
    registration: { enabled: true },
    devInteractions: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A client that names no resource gets none (an opaque token foldgate never sees).
      defaultResource: async (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resourceIndicator) => ({
        scope: scopes.join(' '),
        audience: resourceIndicator,
        accessTokenTTL: accessTTL,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  pkce: { required: () => true },
  // Without offline_access too: an MCP client asks for the resource's scopes, and gets a refresh token
  // when it registered for the grant.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: () => true,
  ttl: {
    AccessToken: accessTTL,
    ClientCredentials: 300,
    AuthorizationCode: 60,
    IdToken: 300,
    Interaction: 600,
    Session: 600,
    Grant: 600,
  },
  // Every account exists: the test logs in as whoever it names.
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
};

const provider = new Provider(issuer, configuration);
provider.on('server_error', (_ctx, err) => console.error('server_error', err));
const server = provider.listen(port, '127.0.0.1', () => {
  console.log(`ready ${issuer}`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
