"""Telling an organisation about its endpoints: operational events and email notices."""
