// Photos: the four accepted types by both encodings, served back byte for byte and safely.
import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import { type Account, call, dataUrl, IMAGES, openTasksServer, type TestServer } from './helpers.js';

const TYPES = Object.entries(IMAGES).map(([name, bytes]) => ({ name, type: `image/${name}`, bytes }));

describe.each(databaseKinds)('photos on %s', (kind) => {
  let server: TestServer;
  let me: Account;
  openTasksServer(kind, 'photo', (opened) => ({ server, me } = opened));

  const image = () =>
    call(server.url, 'GET', `/api/users/getimage?email=${encodeURIComponent(me.email)}`, { token: me.token });

  it.each(TYPES)('stores and serves a $name sent as multipart and as a data URL', async ({ type, bytes }) => {
    const form = new FormData();
    form.append('email', me.email);
    form.append('password', me.password);
    form.append('photo', new Blob([bytes], { type }), '../../etc/passwd');
    expect((await call(server.url, 'PUT', '/api/users/update', { body: form })).status).toBe(200);
    let served = await image();
    expect(served.headers.get('content-type')).toBe(type);
    expect(served.bytes.equals(bytes)).toBe(true);

    await call(server.url, 'PUT', '/api/users/update', {
      json: { email: me.email, password: me.password, photo: null },
    });
    expect((await image()).status).toBe(404);

    const updated = await call(server.url, 'PUT', '/api/users/update', {
      json: { email: me.email, password: me.password, photo: dataUrl(type, bytes) },
    });
    expect(updated.status).toBe(200);
    served = await image();
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe(type);
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect(served.headers.get('content-security-policy')).toBe("default-src 'none'");
    expect(served.bytes.equals(bytes)).toBe(true);
  });

  it('shows the photo address on the user and answers 404 once removed', async () => {
    await call(server.url, 'PUT', '/api/users/update', {
      json: { email: me.email, password: me.password, photo: dataUrl('image/jpg', IMAGES.jpeg) },
    });
    const found = await call(server.url, 'GET', `/api/users/find?id=${me.id}`, { token: me.token });
    expect(found.body.user.photo).toMatch(/^\/api\/users\/getimage\?email=/);
    expect((await image()).headers.get('content-type')).toBe('image/jpeg');
    const removed = await call(server.url, 'PUT', '/api/users/update', {
      json: { email: me.email, password: me.password, photo: null },
    });
    expect(removed.body.user.photo).toBeNull();
    const none = await image();
    expect(none.status).toBe(404);
    expect(none.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });
});
