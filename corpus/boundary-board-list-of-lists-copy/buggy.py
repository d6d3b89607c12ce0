"""A property returns a shallow copy of a list-of-lists board, then edits its rows: reading it edits the board."""

import copy


class Tablero:
    def __init__(self, filas):
        self.tablero = filas

    @property
    def tablero_transformado(self):
        """The board with every 'T' cell shown as 'X'; meant to leave self.tablero alone."""
        transformado = copy.copy(self.tablero)  # like self.tablero[:] or .copy(): the rows are the board's rows
        for fila in transformado:
            for j, celda in enumerate(fila):
                if celda == "T":
                    fila[j] = "X"
        return transformado


def main():
    tablero = Tablero([["T", "-", "2"], ["-", "T", "-"], ["1", "-", "T"]])
    vista = tablero.tablero_transformado
    print(f"transformed: {vista}\noriginal:    {tablero.tablero}")
    assert all(celda != "T" for fila in tablero.tablero for celda in fila), "the bug did not reproduce"


if __name__ == "__main__":
    main()
