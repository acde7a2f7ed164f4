// Configuration of this service, read from the environment (see .env.example).
import type { Env } from '../env.js';

export interface QuotesConfig {}

export function loadQuotesConfig(_env: Env): QuotesConfig {
  return {};
}
