"""The server side of an attached real torch.distributed job (`trainingrun watch`): the ranks'
reports become the same hello, step and trace messages as the built-in run's. The job's side
is app/reporter/."""
