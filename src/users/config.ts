// Configuration of this service, read from the environment (see .env.example).
import type { Env } from '../env.js';

export interface UsersConfig {}

export function loadUsersConfig(_env: Env): UsersConfig {
  return {};
}
