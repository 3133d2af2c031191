"""Strongroom: a booking website whose whole state lives in Redis or Valkey."""
