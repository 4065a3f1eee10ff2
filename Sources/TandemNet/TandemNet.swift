import TandemCore
