"""What a script and the configs it uses say together: the seed of the project model."""
