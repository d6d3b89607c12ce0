"""Each schema deep-copies its class's fields; the field's __deepcopy__ gives the copy its own
metadata dict, so a binding hook writes into this schema's field only."""

import copy


class Field:
    def __init__(self, metadata=None):
        self.metadata = metadata if metadata is not None else {}
        self.name = None

    def __deepcopy__(self, memo):
        new = copy.copy(self)
        new.metadata = dict(self.metadata)  # the copy's own metadata: the hook's write stays in it
        return new


class Schema:
    declared_fields = {"id": Field({"description": "row id"})}

    def __init__(self, unique=False):
        self.fields = copy.deepcopy(self.declared_fields)
        for name, field in self.fields.items():
            field.name = name
            self.on_bind_field(name, field, unique)

    def on_bind_field(self, name, field, unique):
        field.metadata["unique"] = unique  # meant for this schema's field only


def main():
    strict = Schema(unique=True)
    loose = Schema(unique=False)
    print(f"strict: {strict.fields['id'].metadata}\nloose:  {loose.fields['id'].metadata}")
    assert strict.fields["id"].metadata["unique"] is True, "the fix did not hold"


if __name__ == "__main__":
    main()
