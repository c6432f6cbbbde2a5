"""What every JSON endpoint shares: input checks, the error shape, pagination, the schema's fixes, the root."""
