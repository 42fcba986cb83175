// A real OpenID provider (oidc-provider, certified) on loopback: the authorization server of the demo's
// OAuth-protected upstream (demo/run.sh) and of foldgate's OAuth tests.
//
// Started by demo/run.sh and tests/oauth_provider.py (a pytest fixture) as:
//   node provider.mjs   with  PORT, KEYS_FILE, SCOPES, MACHINE_SECRET (tests), PUBLIC_CLIENT_ID and
//   PUBLIC_REDIRECT_URI (the demo)  in the environment (only PORT is required) and prints one line "ready <issuer>" once it listens.
//
// - client credentials for a machine agent (client "machine-agent", secret MACHINE_SECRET);
// - authorization code + PKCE for user agents, registered dynamically (RFC 7591) by the MCP SDK;
//   login and consent are oidc-provider's dev interactions, which the tests drive over HTTP;
// - resource indicators (RFC 8707): every access token is a JWT whose `aud` is the resource the
//   client asked for, carrying only the scopes SCOPES lists, and lives 5 minutes;
// - refresh tokens (upstream OAuth tests): issued to clients registered for the refresh_token grant,
//   rotated on every use (the old one stops working), revocable (RFC 7009); ACCESS_TTL (seconds,
//   default 300) shortens access tokens (the machine agent's too) so a test sees them expire;
// - signing keys come from KEYS_FILE (a private JWKS the fixture generated), so tests can also forge
//   tokens with the provider's own key (expired, wrong audience, ...) and check foldgate refuses them;
//   without KEYS_FILE (the demo) a fresh ES256 and RS256 pair is generated per start, never written out
//   (oidc-provider's built-in keys are public development keys: anyone could mint tokens with them).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

function freshKeys() {
  const jwk = (kind, options, alg) => ({
    ...generateKeyPairSync(kind, options).privateKey.export({ format: 'jwk' }),
    kid: `${alg.slice(0, 2).toLowerCase()}-${randomBytes(4).toString('hex')}`,
    alg,
    use: 'sig',
  });
  return {
    keys: [jwk('ec', { namedCurve: 'P-256' }, 'ES256'), jwk('rsa', { modulusLength: 2048 }, 'RS256')],
  };
}

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const keys = process.env.KEYS_FILE ? JSON.parse(readFileSync(process.env.KEYS_FILE, 'utf8')) : freshKeys();
const scopes = (process.env.SCOPES || 'foldgate:read foldgate:write foldgate:destructive').split(' ');
const accessTTL = Number(process.env.ACCESS_TTL || 300);

// PUBLIC_CLIENT_ID + PUBLIC_REDIRECT_URI (the demo): a pre-registered public client (PKCE, no secret)
// for that redirect URI. The provider keeps its state in memory, so a client foldgate registered
// dynamically would be forgotten when the demo restarts; this one stays the same.
const publicClients = process.env.PUBLIC_CLIENT_ID
  ? [
      {
        client_id: process.env.PUBLIC_CLIENT_ID,
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: [process.env.PUBLIC_REDIRECT_URI],
      },
    ]
  : [];

const configuration = {
  jwks: keys,
  clients: [
    ...publicClients,
    {
      client_id: 'machine-agent',
      // Unset (the demo): a random secret nobody knows, so the machine client is unusable.
      client_secret: process.env.MACHINE_SECRET || randomBytes(24).toString('base64url'),
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
    ClientCredentials: accessTTL,
    AuthorizationCode: 60,
    IdToken: 300,
    Interaction: 600,
    Session: 600,
    Grant: 600,
  },
  // Every account exists: the test (or the demo's person) logs in as whoever it names.
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
