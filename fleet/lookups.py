"""`field__any=values`: one array parameter (`= ANY(%s)`) instead of `IN (%s, %s, …)`.

For the long lists the alert evaluation filters by (a thousand GPUs, hundreds of keys), the ORM's `__in`
prepared and placed every value on its own, which cost more than running the query. Registered on every
field, it shadows a JSON key named "any" (`details__any` is this lookup, not that key).
"""

from django.core.exceptions import EmptyResultSet
from django.db.models import Field, ForeignObject, Lookup


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


Field.register_lookup(AnyOf)
ForeignObject.register_lookup(AnyOf)  # a relation's lookups stop at ForeignObject: give it its own
