"""The HTTP API: the app, its routers (runs, sessions, schemas, agents) and their bodies."""
