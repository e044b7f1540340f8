"""fuser.tools"""
