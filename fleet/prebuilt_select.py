"""Rows of a model, with some of its foreign keys, read by one SELECT written once at start-up.

For the two look-ups every booking through the API makes (the caller's token with its user, the named
GPUs with their nodes and models), building the query through the ORM cost more CPU than anything else in
the request (docs/benchmarks.md#reservations).
The statement is built from the models' own metadata, so columns follow the models.
"""

from django.db import connection, models


class PrebuiltSelect:
    """`model` rows whose `key` column equals a value (or, with `many`, is among some values), each with
    the objects of the foreign keys named in `joined` attached as `select_related` would attach them."""

    def __init__(self, model: type[models.Model], key: str, joined: tuple[str, ...] = (), many: bool = False):
        fields = [None] + [model._meta.get_field(name) for name in joined]
        self.parts = []  # (foreign key or None for the model itself, model read, its attribute names, pk's place)
        self.converters = []  # (column's place, what the ORM would run on its value, the column) where any
        columns, tables = [], [f'"{model._meta.db_table}" t0']
        for n, field in enumerate(fields):
            part_model = model if field is None else field.related_model
            concrete = part_model._meta.concrete_fields
            self.parts.append((field, part_model, [f.attname for f in concrete], concrete.index(part_model._meta.pk)))
            for f in concrete:
                col = f.get_col(f"t{n}")
                run = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
                if run:
                    self.converters.append((len(columns), run, col))
                columns.append(f't{n}."{f.column}"')
            if field is not None:
                join = "LEFT JOIN" if field.null else "JOIN"
                on = f't{n}."{field.target_field.column}" = t0."{field.column}"'
                tables.append(f'{join} "{part_model._meta.db_table}" t{n} ON {on}')
        where = f't0."{model._meta.get_field(key).column}" ' + ("= ANY(%s)" if many else "= %s")
        self.sql = f"SELECT {', '.join(columns)} FROM {' '.join(tables)} WHERE {where}"

    def fetch(self, value) -> list[models.Model]:
        with connection.cursor() as cursor:
            cursor.execute(self.sql, [value])
            return [self.build(self.convert(row)) for row in cursor.fetchall()]

    def convert(self, row: tuple) -> list:
        """Values as the ORM gives them (JSON decoded, for one), by the same converters it runs."""
        row = list(row)
        for at, run, col in self.converters:
            for converter in run:
                row[at] = converter(row[at], col, connection)
        return row

    def build(self, row: list) -> models.Model:
        start, found = 0, None
        for field, part_model, names, pk_at in self.parts:
            values = row[start : start + len(names)]
            start += len(names)
            if field is None:
                found = part_model.from_db(connection.alias, names, values)
            else:  # a LEFT JOIN that found nothing reads as None, as select_related leaves it
                related = None if values[pk_at] is None else part_model.from_db(connection.alias, names, values)
                field.set_cached_value(found, related)
        return found
