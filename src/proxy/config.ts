// Configuration of this service, read from the environment (see .env.example).
import type { Env } from '../env.js';

export interface ProxyConfig {}

export function loadProxyConfig(_env: Env): ProxyConfig {
  return {};
}
