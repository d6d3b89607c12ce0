"""Each schema deep-copies its class's fields; a field's __deepcopy__ is a shallow copy, so the
metadata dict a binding hook writes into is the class's, shared by every schema instance."""

import copy


class Field:
    def __init__(self, metadata=None):
        self.metadata = metadata if metadata is not None else {}
        self.name = None

    def __deepcopy__(self, memo):
        return copy.copy(self)  # as marshmallow's Field does: the copy shares self.metadata


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
    assert strict.fields["id"].metadata["unique"] is False, "the bug did not reproduce"


if __name__ == "__main__":
    main()
