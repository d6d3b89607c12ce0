"""The property copies every row: the original board keeps its cells."""


class Tablero:
    def __init__(self, filas):
        self.tablero = filas

    @property
    def tablero_transformado(self):
        """The board with every 'T' cell shown as 'X'; self.tablero is left alone."""
        transformado = [list(fila) for fila in self.tablero]  # new rows (copy.deepcopy works too)
        for fila in transformado:
            for j, celda in enumerate(fila):
                if celda == "T":
                    fila[j] = "X"
        return transformado


def main():
    tablero = Tablero([["T", "-", "2"], ["-", "T", "-"], ["1", "-", "T"]])
    vista = tablero.tablero_transformado
    print(f"transformed: {vista}\noriginal:    {tablero.tablero}")
    assert tablero.tablero == [["T", "-", "2"], ["-", "T", "-"], ["1", "-", "T"]]
    assert vista == [["X", "-", "2"], ["-", "X", "-"], ["1", "-", "X"]]


if __name__ == "__main__":
    main()
