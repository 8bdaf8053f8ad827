"""The web dashboard: static pages (plain JavaScript, no build step) that ``fedq server`` serves at ``/ui``
and that read everything through the REST API with the user's own token (see docs/ui.md)."""
