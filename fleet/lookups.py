"""`field__any=values`: one array parameter (`= ANY(%s)`) instead of `IN (%s, %s, …)`.

For the long lists the alert evaluation filters by (a thousand GPUs, hundreds of keys), the ORM's `__in`
prepared and placed every value on its own, which cost more than running the query. It is registered on
the key, number, text and relation fields only, so a JSON field's key named "any" keeps meaning that key.
"""

from django.core.exceptions import EmptyResultSet
from django.db.models import CharField, ForeignObject, IntegerField, Lookup, TextField, UUIDField


class AnyOf(Lookup):
    lookup_name = "any"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        if not self.rhs:
            raise EmptyResultSet  # as `__in=[]`: nothing matches, and the ORM skips the query
        lhs, lhs_params = self.process_lhs(compiler, connection)
        field = self.lhs.output_field
        values = [field.get_db_prep_value(value, connection, prepared=False) for value in self.rhs]
        return f"{lhs} = ANY(%s)", [*lhs_params, values]


# IntegerField covers the auto keys; a relation's lookups stop at ForeignObject, so it needs its own.
for field_class in (IntegerField, CharField, TextField, UUIDField, ForeignObject):
    field_class.register_lookup(AnyOf)
