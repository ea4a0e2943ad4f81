"""Data tables: each names its source; code elsewhere only reads them."""
