// Area A part 2: the catch-all that forwards every unclaimed path upstream, and /admin/.
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../services.js';

export async function registerForwardRoutes(_app: FastifyInstance, _context: ServiceContext) {}
