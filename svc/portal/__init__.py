"""The embeddable portal's sessions: one-time links a platform asks for on behalf of one of its
organisations, and the browser sessions they start (scope, frame origin, branding)."""
